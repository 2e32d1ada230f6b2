// The generated TypeScript API of Code Mode: every tool a program may call, as a typed async
// function of the `tools` object, derived from the tool's JSON Schema. Pure text generation.
import type { JsonSchema } from '@dsh/llm'

type Schema = JsonSchema & Record<string, unknown>

const IDENTIFIER = /^[A-Za-z_$][A-Za-z0-9_$]*$/
const MAX_DEPTH = 8

/** A property key or member name as TypeScript accepts it. */
export function memberName(name: string): string {
  return IDENTIFIER.test(name) ? name : JSON.stringify(name)
}

/** How a program calls tool `name`: `tools.read(...)` or `tools["my-tool"](...)`. */
export function callExpression(namespace: string, name: string): string {
  return IDENTIFIER.test(name) ? `${namespace}.${name}` : `${namespace}[${JSON.stringify(name)}]`
}

/** `/** ... *\/` for a description, each line indented; empty for none. */
function doc(text: unknown, indent: string): string {
  if (typeof text !== 'string' || text.trim() === '') return ''
  const lines = text.trim().replace(/\*\//g, '*\\/').split('\n')
  if (lines.length === 1) return `${indent}/** ${lines[0]} */\n`
  return `${indent}/**\n${lines.map((line) => `${indent} * ${line}`.trimEnd()).join('\n')}\n${indent} */\n`
}

const literal = (value: unknown) =>
  value === null || ['string', 'number', 'boolean'].includes(typeof value) ? JSON.stringify(value) : 'unknown'

/** A TypeScript type expression for a JSON Schema (draft-07 subset; anything else reads `unknown`). */
export function schemaType(schema: unknown, indent = '', depth = 0): string {
  if (schema === true || schema === undefined) return 'unknown'
  if (schema === false) return 'never'
  if (schema === null || typeof schema !== 'object' || depth > MAX_DEPTH) return 'unknown'
  const s = schema as Schema
  if ('const' in s) return literal(s.const)
  if (Array.isArray(s.enum)) return s.enum.length > 0 ? s.enum.map(literal).join(' | ') : 'never'
  for (const key of ['anyOf', 'oneOf'] as const) {
    const list = s[key]
    if (Array.isArray(list) && list.length > 0)
      return list.map((item) => wrap(schemaType(item, indent, depth + 1))).join(' | ')
  }
  if (Array.isArray(s.allOf) && s.allOf.length > 0)
    return s.allOf.map((item) => wrap(schemaType(item, indent, depth + 1))).join(' & ')
  const type = s.type
  if (Array.isArray(type)) return type.map((t) => wrap(schemaType({ ...s, type: t }, indent, depth + 1))).join(' | ')
  switch (type) {
    case 'string':
      return 'string'
    case 'number':
    case 'integer':
      return 'number'
    case 'boolean':
      return 'boolean'
    case 'null':
      return 'null'
    case 'array': {
      const items = s.items
      if (Array.isArray(items)) return `[${items.map((item) => schemaType(item, indent, depth + 1)).join(', ')}]`
      return `${wrap(schemaType(items, indent, depth + 1))}[]`
    }
    case 'object':
      return objectType(s, indent, depth)
    default:
      return s.properties && typeof s.properties === 'object' ? objectType(s, indent, depth) : 'unknown'
  }
}

function wrap(type: string): string {
  return /[|&]/.test(type) && !/^[{[]/.test(type) ? `(${type})` : type
}

function objectType(s: Schema, indent: string, depth: number): string {
  const properties = (s.properties && typeof s.properties === 'object' ? s.properties : {}) as Record<string, unknown>
  const required = new Set(Array.isArray(s.required) ? (s.required as string[]) : [])
  const inner = `${indent}  `
  const lines: string[] = []
  for (const [key, value] of Object.entries(properties)) {
    const description = value && typeof value === 'object' ? (value as Schema).description : undefined
    lines.push(
      `${doc(description, inner)}${inner}${memberName(key)}${required.has(key) ? '' : '?'}: ${schemaType(value, inner, depth + 1)}`,
    )
  }
  const extra = s.additionalProperties
  if (extra !== undefined && extra !== false && (Object.keys(properties).length === 0 || typeof extra === 'object')) {
    lines.push(`${inner}[key: string]: ${extra === true ? 'unknown' : schemaType(extra, inner, depth + 1)}`)
  }
  if (lines.length === 0) return extra === false ? 'Record<string, never>' : 'Record<string, unknown>'
  return `{\n${lines.join('\n')}\n${indent}}`
}

export interface SdkTool {
  name: string
  description: string
  parameters: JsonSchema
}

/** The declaration of one tool as a member of the `tools` object. */
export function renderTool(tool: SdkTool): string {
  const params = schemaType(tool.parameters, '  ')
  const optional = !(
    Array.isArray((tool.parameters as Schema).required) &&
    ((tool.parameters as Schema).required as unknown[]).length > 0
  )
  return `${doc(tool.description, '  ')}  ${memberName(tool.name)}(args${optional ? '?' : ''}: ${params}): Promise<string>`
}

/** `declare const tools: {...}` for the given tools (in the given order). */
export function renderDeclarations(tools: readonly SdkTool[], render: (tool: SdkTool) => string = renderTool): string {
  if (tools.length === 0) return 'declare const tools: {}'
  return `declare const tools: {\n${tools.map(render).join('\n')}\n}`
}
