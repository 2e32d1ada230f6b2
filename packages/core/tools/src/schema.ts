// Compiles tool parameter schemas once (ajv 8, draft-07 semantics) and turns validation failures
// into a short list of `path: message` lines the model can act on.
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv'
import type { JsonSchema } from './types.ts'

export type ArgumentValidator = (value: unknown) => string[] | undefined

const MAX_REPORTED_ERRORS = 8

export class SchemaCompiler {
  private ajv = new Ajv({
    allErrors: true,
    // Tool schemas come from many sources (MCP servers, hand-written plugins); unknown keywords and
    // formats are tolerated, but the schema must still be valid against the meta-schema.
    strict: false,
    validateFormats: false,
    addUsedSchema: false,
    logger: false,
  })

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
    // Checked against the meta-schema now (a bad schema fails at registration); code generation
    // waits for the tool's first call, so start-up does not pay for tools that are never called.
    if (!this.ajv.validateSchema(body)) {
      throw new TypeError(`tool "${toolName}": parameters are not a valid JSON Schema: ${this.ajv.errorsText(this.ajv.errors)}`)
    }
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
