// Validates tool arguments against their parameter schemas (@cfworker/json-schema, draft-07
// semantics) and turns failures into a short list of `path: message` lines the model can act on.
//
// Start-up matters (every tool registers at boot, few are called in a one-shot run), so a schema
// gets a structural check at registration, and the validator library is loaded when a tool is
// first called. See .agents/notes/tools-validator.md for why this library rather than ajv.
import { createRequire } from 'node:module'
import type { OutputUnit, Validator as ValidatorType } from '@cfworker/json-schema'
import type { JsonSchema } from './types.ts'

export type ArgumentValidator = (value: unknown) => string[] | undefined

const MAX_REPORTED_ERRORS = 8

const JSON_TYPES = new Set(['string', 'number', 'integer', 'boolean', 'object', 'array', 'null'])
/** Keywords whose value must be a schema object (or, for items, an array of them). */
const SUBSCHEMA_MAPS = ['properties', 'patternProperties', 'definitions', '$defs'] as const
const SUBSCHEMAS = [
  'items',
  'additionalProperties',
  'not',
  'if',
  'then',
  'else',
  'contains',
  'propertyNames',
  'additionalItems',
] as const
const SUBSCHEMA_LISTS = ['allOf', 'anyOf', 'oneOf'] as const
const NON_NEGATIVE = ['minLength', 'maxLength', 'minItems', 'maxItems', 'minProperties', 'maxProperties'] as const

/** The first structural mistake in `schema` (a path and a reason), or undefined. Not a full meta-validation. */
export function schemaProblem(schema: unknown, path = ''): string | undefined {
  if (typeof schema === 'boolean') return undefined
  if (schema === null || typeof schema !== 'object' || Array.isArray(schema))
    return `${path || '(root)'}: a schema must be an object or a boolean`
  const s = schema as Record<string, unknown>
  if (s.type !== undefined) {
    const types = Array.isArray(s.type) ? s.type : [s.type]
    const bad = types.find((t) => typeof t !== 'string' || !JSON_TYPES.has(t))
    if (bad !== undefined || types.length === 0)
      return `${path}/type: must be a JSON type or a list of them, not ${JSON.stringify(s.type)}`
  }
  if (s.required !== undefined && (!Array.isArray(s.required) || s.required.some((r) => typeof r !== 'string'))) {
    return `${path}/required: must be a list of property names`
  }
  if (s.enum !== undefined && !Array.isArray(s.enum)) return `${path}/enum: must be a list`
  if (s.pattern !== undefined && !isRegExpSource(s.pattern))
    return `${path}/pattern: must be a regular expression string`
  for (const key of NON_NEGATIVE) {
    const v = s[key]
    if (v !== undefined && !(Number.isInteger(v) && (v as number) >= 0))
      return `${path}/${key}: must be a non-negative integer`
  }
  for (const key of SUBSCHEMA_MAPS) {
    const map = s[key]
    if (map === undefined) continue
    if (map === null || typeof map !== 'object' || Array.isArray(map))
      return `${path}/${key}: must be an object of schemas`
    for (const [name, sub] of Object.entries(map)) {
      const problem = schemaProblem(sub, `${path}/${key}/${name}`)
      if (problem) return problem
    }
  }
  for (const key of SUBSCHEMAS) {
    const sub = s[key]
    if (sub === undefined) continue
    const list = key === 'items' && Array.isArray(sub) ? sub : [sub]
    for (const [i, item] of list.entries()) {
      const problem = schemaProblem(item, Array.isArray(sub) ? `${path}/${key}/${i}` : `${path}/${key}`)
      if (problem) return problem
    }
  }
  for (const key of SUBSCHEMA_LISTS) {
    const list = s[key]
    if (list === undefined) continue
    if (!Array.isArray(list) || list.length === 0) return `${path}/${key}: must be a non-empty list of schemas`
    for (const [i, item] of list.entries()) {
      const problem = schemaProblem(item, `${path}/${key}/${i}`)
      if (problem) return problem
    }
  }
  return undefined
}

function isRegExpSource(value: unknown): boolean {
  if (typeof value !== 'string') return false
  try {
    new RegExp(value, 'u')
    return true
  } catch {
    return false
  }
}

let ValidatorClass: typeof ValidatorType | undefined
const loadValidator = (): typeof ValidatorType =>
  (ValidatorClass ??= (createRequire(import.meta.url)('@cfworker/json-schema') as { Validator: typeof ValidatorType })
    .Validator)

export class SchemaCompiler {
  /** Checks `schema` now and returns the validator of the tool's arguments; throws a TypeError naming the tool. */
  compile(toolName: string, schema: JsonSchema): ArgumentValidator {
    if (schema === null || typeof schema !== 'object' || Array.isArray(schema)) {
      throw new TypeError(`tool "${toolName}": parameters must be a JSON Schema object`)
    }
    if (schema.type !== 'object') {
      throw new TypeError(`tool "${toolName}": parameters must have type "object" (got ${JSON.stringify(schema.type)})`)
    }
    // A `$schema` URI naming a draft would switch the validator's dialect; the keywords tools use
    // are shared by all recent drafts, so it is ignored.
    const { $schema: _ignored, ...body } = schema
    // A structural check now (a malformed schema fails at registration); the validator is built
    // at the tool's first call, so start-up does not pay for tools that are never called.
    const problem = schemaProblem(body)
    if (problem) throw new TypeError(`tool "${toolName}": parameters are not a valid JSON Schema: ${problem}`)
    let validator: ValidatorType | undefined
    return (value) => {
      try {
        validator ??= new (loadValidator())(body as object, '7', false)
        const result = validator.validate(value)
        return result.valid ? undefined : summarize(result.errors, body)
      } catch (error) {
        // Structurally fine but unusable (e.g. an unresolvable $ref): report it as the call's error.
        return [`(schema) the tool's parameter schema cannot be applied: ${(error as Error).message}`]
      }
    }
  }
}

/** Keywords whose failure only says "a child failed"; the child's own error is the useful line. */
const CASCADE = new Set([
  'properties',
  'items',
  'additionalItems',
  'patternProperties',
  'prefixItems',
  'contains',
  '$ref',
  'allOf',
  'if',
  'then',
  'else',
  'dependentSchemas',
  'unevaluatedProperties',
  'unevaluatedItems',
])

function summarize(errors: readonly OutputUnit[], schema: object): string[] {
  const lines: string[] = []
  const seen = new Set<string>()
  for (const error of errors) {
    if (CASCADE.has(error.keyword)) continue
    const line = describe(error, schema)
    if (!line || seen.has(line)) continue
    seen.add(line)
    lines.push(line)
  }
  if (lines.length === 0 && errors.length > 0)
    lines.push(`${where(errors[0].instanceLocation)}: does not match the schema`)
  if (lines.length > MAX_REPORTED_ERRORS) {
    const more = lines.length - MAX_REPORTED_ERRORS
    return [...lines.slice(0, MAX_REPORTED_ERRORS), `(${more} more)`]
  }
  return lines
}

/** `#/a/0` -> `/a/0`; the root -> `(root)`. */
function where(instanceLocation: string): string {
  const path = instanceLocation.replace(/^#/, '')
  return path === '' ? '(root)' : path
}

/** The schema value at a keyword location such as `#/properties/count/minimum`. */
function valueAt(schema: object, keywordLocation: string): unknown {
  let node: unknown = schema
  for (const raw of keywordLocation.replace(/^#\/?/, '').split('/')) {
    if (raw === '') continue
    const key = raw.replace(/~1/g, '/').replace(/~0/g, '~')
    if (node === null || typeof node !== 'object') return undefined
    node = (node as Record<string, unknown>)[key]
  }
  return node
}

function describe(error: OutputUnit, schema: object): string | undefined {
  const at = where(error.instanceLocation)
  const value = valueAt(schema, error.keywordLocation)
  switch (error.keyword) {
    case 'required': {
      const name = /property "(.*)"/.exec(error.error)?.[1]
      return `${at}: missing required property "${name ?? '?'}"`
    }
    case 'additionalProperties':
      // The offending property itself is reported by the following `false` unit.
      return undefined
    case 'false': {
      // `additionalProperties: false` reports each extra property at its own location.
      const slash = at.lastIndexOf('/')
      return slash >= 0
        ? `${at.slice(0, slash) || '(root)'}: unexpected property "${at.slice(slash + 1)}"`
        : `${at}: not allowed`
    }
    case 'type':
      return `${at}: must be ${Array.isArray(value) ? value.join(' or ') : String(value)}`
    case 'enum':
      return `${at}: must be one of ${JSON.stringify(value)}`
    case 'const':
      return `${at}: must be ${JSON.stringify(value)}`
    case 'minimum':
      return `${at}: must be >= ${String(value)}`
    case 'maximum':
      return `${at}: must be <= ${String(value)}`
    case 'exclusiveMinimum':
      return `${at}: must be > ${String(value)}`
    case 'exclusiveMaximum':
      return `${at}: must be < ${String(value)}`
    case 'minLength':
      return `${at}: must have at least ${String(value)} characters`
    case 'maxLength':
      return `${at}: must have at most ${String(value)} characters`
    case 'minItems':
      return `${at}: must have at least ${String(value)} items`
    case 'maxItems':
      return `${at}: must have at most ${String(value)} items`
    case 'pattern':
      return `${at}: must match the pattern ${JSON.stringify(value)}`
    case 'anyOf':
    case 'oneOf':
      return `${at}: must match ${error.keyword === 'oneOf' ? 'exactly one' : 'at least one'} of the allowed shapes`
    default:
      return `${at}: ${error.error.replace(/\.$/, '')}`
  }
}
