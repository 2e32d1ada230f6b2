// A server's `tools/list`, read loosely and checked tool by tool (the SDK's tool schema, task-only
// tools, output schemas the validator cannot compile), so one tool dsh cannot use is skipped with a
// reason and the server's other tools still load; and how a listed tool becomes registry input.
import type { Tool } from '@modelcontextprotocol/sdk/types.js'
import type { JsonSchema } from '@dsh/tools'
import type { Client } from './sdk.ts'
import { sdk as loadedSdk } from './sdk.ts'
import { firstLine, zodSummary } from './failures.ts'

/** Checks a structured result against the tool's output schema. */
export type OutputCheck = (value: unknown) => { valid: boolean; errorMessage?: string }

/** Compiles a JSON schema into a check, throwing on a schema it cannot compile (the SDK's ajv). */
export interface SchemaCompiler {
  getValidator(schema: unknown): OutputCheck
}

/**
 * The client's own JSON-schema validator (ajv, as `listTools()` would use it to cache output
 * schemas). The SDK keeps it in a private field; the SDK version is pinned exactly, and without the
 * field output schemas are simply not checked. Importing the SDK's ajv provider module separately
 * broke in the prelinked bundle ("Ajv is not a constructor"), hence the field.
 */
export function compilerOf(client: Client): SchemaCompiler | undefined {
  const field = (client as unknown as { _jsonSchemaValidator?: Partial<SchemaCompiler> })._jsonSchemaValidator
  return typeof field?.getValidator === 'function' ? (field as SchemaCompiler) : undefined
}

export interface CheckedTools {
  tools: Tool[]
  skipped: Array<{ tool: string; reason: string }>
  /** Output-schema checks by raw tool name. */
  checks: Map<string, OutputCheck>
}

/**
 * Checks each listed tool on its own: the SDK's tool schema, a task-only tool (dsh calls tools
 * directly), an output schema the validator cannot compile. Needs the SDK loaded.
 */
export function checkListedTools(listed: unknown[], validator: SchemaCompiler | undefined): CheckedTools {
  const { ToolSchema } = loadedSdk!
  const tools: Tool[] = []
  const skipped: Array<{ tool: string; reason: string }> = []
  const checks = new Map<string, OutputCheck>()
  const nameOf = (raw: unknown) => {
    const name = (raw as { name?: unknown } | null)?.name
    return typeof name === 'string' && name !== '' ? name : JSON.stringify(name ?? null)
  }
  for (const raw of listed) {
    const parsed = ToolSchema.safeParse(raw)
    if (!parsed.success) {
      skipped.push({
        tool: nameOf(raw),
        reason: `its definition does not follow the MCP schema (${zodSummary(parsed.error)})`,
      })
      continue
    }
    const tool = parsed.data as Tool
    if (tool.execution?.taskSupport === 'required') {
      skipped.push({ tool: tool.name, reason: 'it can only run as an MCP task, which dsh does not start' })
      continue
    }
    if (tool.outputSchema && validator) {
      try {
        checks.set(tool.name, validator.getValidator(tool.outputSchema))
      } catch (error) {
        skipped.push({ tool: tool.name, reason: `its output schema is invalid (${firstLine(error)})` })
        continue
      }
    }
    tools.push(tool)
  }
  return { tools, skipped, checks }
}

/**
 * Every page of `tools/list`, read with a schema that checks only the page: `client.listTools()`
 * validates the whole list at once (one malformed tool, or an output schema ajv cannot compile,
 * rejects it and with it the server), so each tool is checked on its own by `checkListedTools`.
 */
export async function listAllTools(client: Client, timeout: number): Promise<unknown[]> {
  // A server that offers no tools (only resources or prompts) need not answer tools/list at all.
  if (client.getServerCapabilities()?.tools === undefined) return []
  const { PaginatedResultSchema } = loadedSdk!
  const tools: unknown[] = []
  let cursor: string | undefined
  const seen = new Set<string>()
  do {
    const page = await client.request(
      { method: 'tools/list', ...(cursor ? { params: { cursor } } : {}) },
      PaginatedResultSchema,
      { timeout },
    )
    const listed = (page as { tools?: unknown }).tools
    if (!Array.isArray(listed)) throw new Error('the server answered tools/list without a tools array')
    tools.push(...listed)
    cursor = page.nextCursor
    if (cursor !== undefined) {
      if (seen.has(cursor)) break
      seen.add(cursor)
    }
  } while (cursor)
  return tools
}

/**
 * Why a result breaks the tool's output schema (a sentence), or undefined when it conforms or
 * there is no schema to check. Error results are not checked.
 */
export function outputProblem(
  check: OutputCheck | undefined,
  result: { [key: string]: unknown },
  tool: string,
  server: string,
): string | undefined {
  if (!check || result.isError) return undefined
  if (!result.structuredContent)
    return `tool "${tool}" (MCP server "${server}") declares an output schema but returned no structured content.`
  const verdict = check(result.structuredContent)
  if (verdict.valid) return undefined
  return `tool "${tool}" (MCP server "${server}") returned structured content that does not match its output schema: ${verdict.errorMessage ?? 'invalid'}.`
}

/** What decides whether a listed tool must be registered again: its description, schema, read-only hint. */
export function keyOf(tool: Tool): string {
  return JSON.stringify([
    tool.description ?? tool.title ?? '',
    tool.inputSchema ?? null,
    tool.annotations?.readOnlyHint === true,
  ])
}

/** The tool's input schema as registry parameters; a schema without `type: object` is wrapped. */
export function parametersOf(tool: Tool): JsonSchema {
  const schema = (tool.inputSchema ?? {}) as Record<string, unknown>
  const { $schema: _ignored, ...rest } = schema
  return { ...rest, type: 'object' } as JsonSchema
}
