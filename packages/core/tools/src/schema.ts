// Compiles tool parameter schemas once (ajv 8, draft-07 semantics) and turns validation failures
// into a short list of `path: message` lines the model can act on.
//
// Start-up matters (every tool registers at boot, few are called in a one-shot run), so a schema
// gets a structural check at registration, and ajv itself is loaded and the validator generated
// when the tool is first called. Loading ajv and compiling its meta-schema cost ~50 ms.
import { createRequire } from 'node:module'
import type { Ajv as AjvType, ErrorObject, ValidateFunction } from 'ajv'
import type { JsonSchema } from './types.ts'

const JSON_TYPES = new Set(['string', 'number', 'integer', 'boolean', 'object', 'array', 'null'])
/** Keywords whose value must be a schema object (or, for items, an array of them). */
const SUBSCHEMA_MAPS = ['properties', 'patternProperties', 'definitions', '$defs'] as const
const SUBSCHEMAS = ['items', 'additionalProperties', 'not', 'if', 'then', 'else', 'contains', 'propertyNames', 'additionalItems'] as const
const SUBSCHEMA_LISTS = ['allOf', 'anyOf', 'oneOf'] as const
const NON_NEGATIVE = ['minLength', 'maxLength', 'minItems', 'maxItems', 'minProperties', 'maxProperties'] as const

/** The first structural mistake in `schema` (a path and a reason), or undefined. Not a full meta-validation. */
export function schemaProblem(schema: unknown, path = ''): string | undefined {
  if (typeof schema === 'boolean') return undefined
  if (schema === null || typeof schema !== 'object' || Array.isArray(schema)) return `${path || '(root)'}: a schema must be an object or a boolean`
  const s = schema as Record<string, unknown>
  if (s.type !== undefined) {
    const types = Array.isArray(s.type) ? s.type : [s.type]
    const bad = types.find((t) => typeof t !== 'string' || !JSON_TYPES.has(t))
    if (bad !== undefined || types.length === 0) return `${path}/type: must be a JSON type or a list of them, not ${JSON.stringify(s.type)}`
  }
  if (s.required !== undefined && (!Array.isArray(s.required) || s.required.some((r) => typeof r !== 'string'))) {
    return `${path}/required: must be a list of property names`
  }
  if (s.enum !== undefined && !Array.isArray(s.enum)) return `${path}/enum: must be a list`
  for (const key of NON_NEGATIVE) {
    const v = s[key]
    if (v !== undefined && !(Number.isInteger(v) && (v as number) >= 0)) return `${path}/${key}: must be a non-negative integer`
  }
  for (const key of SUBSCHEMA_MAPS) {
    const map = s[key]
    if (map === undefined) continue
    if (map === null || typeof map !== 'object' || Array.isArray(map)) return `${path}/${key}: must be an object of schemas`
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

let AjvClass: typeof AjvType | undefined
const loadAjv = (): typeof AjvType => (AjvClass ??= (createRequire(import.meta.url)('ajv') as { Ajv: typeof AjvType }).Ajv)

export type ArgumentValidator = (value: unknown) => string[] | undefined

const MAX_REPORTED_ERRORS = 8

export class SchemaCompiler {
  private instance: AjvType | undefined
  private get ajv(): AjvType {
    return (this.instance ??= new (loadAjv())({
      allErrors: true,
      // Tool schemas come from many sources (MCP servers, hand-written plugins); unknown keywords
      // and formats are tolerated. ajv still rejects malformed keyword values while generating
      // code, so skipping the meta-schema pass loses no safety at call time.
      strict: false,
      validateFormats: false,
      validateSchema: false,
      addUsedSchema: false,
      logger: false,
    }))
  }

  /** Throws a TypeError naming the tool when the schema does not compile. */
  compile(toolName: string, schema: JsonSchema): ArgumentValidator {
    if (schema === null || typeof schema !== 'object' || Array.isArray(schema)) {
      throw new TypeError(`tool "${toolName}": parameters must be a JSON Schema object`)
    }
    if (schema.type !== 'object') {
      throw new TypeError(`tool "${toolName}": parameters must have type "object" (got ${JSON.stringify(schema.type)})`)
    }
    // A `$schema` URI naming a draft this ajv build does not bundle would fail to resolve; the
    // keywords tools use are shared by all recent drafts, so it is ignored.
    const { $schema: _ignored, ...body } = schema
    // A structural check now (a malformed schema fails at registration); code generation waits
    // for the tool's first call, so start-up does not pay for tools that are never called.
    const problem = schemaProblem(body)
    if (problem) throw new TypeError(`tool "${toolName}": parameters are not a valid JSON Schema: ${problem}`)
    let validate: ValidateFunction | undefined
    return (value) => {
      if (!validate) {
        try {
          validate = this.ajv.compile(body)
        } catch (error) {
          // Meta-valid but uncompilable (e.g. an unresolvable $ref): report it as the call's error.
          return [`(schema) the tool's parameter schema does not compile: ${(error as Error).message}`]
        }
      }
      return validate(value) ? undefined : summarize(validate.errors ?? [])
    }
  }
}

function summarize(errors: ErrorObject[]): string[] {
  const lines: string[] = []
  for (const error of errors) {
    if (lines.length >= MAX_REPORTED_ERRORS) {
      lines.push(`(${errors.length - MAX_REPORTED_ERRORS} more)`)
      break
    }
    lines.push(`${error.instancePath === '' ? '(root)' : error.instancePath}: ${describe(error)}`)
  }
  return lines
}

function describe(error: ErrorObject): string {
  const params = error.params as Record<string, unknown>
  switch (error.keyword) {
    case 'additionalProperties':
      return `unexpected property "${String(params.additionalProperty)}"`
    case 'required':
      return `missing required property "${String(params.missingProperty)}"`
    case 'enum':
      return `must be one of ${JSON.stringify(params.allowedValues)}`
    default:
      return error.message ?? `fails "${error.keyword}"`
  }
}
