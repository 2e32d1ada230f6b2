// Builders for the registry's own error outputs (the sentences the model reads) and the
// conversion of a ToolOutput into the session's `tool/result` payload.
import type { ToolResultContentBlock } from '@dsh/llm'
import type { JsonObject, ToolCallRequest, ToolError, ToolErrorCode, ToolOutput, ToolResultPayload } from './types.ts'

/**
 * A tool's own model-visible error result: `Error [CODE]: message` as the content, the same code and
 * message in `error`, and `meta` when given. What a tool returns for bad model input instead of
 * throwing into the loop.
 */
export function toolError(code: string, message: string, meta?: JsonObject): ToolOutput {
  return { content: `Error [${code}]: ${message}`, isError: true, error: { code, message }, ...(meta ? { meta } : {}) }
}

export function errorOutput(code: ToolErrorCode | string, sentence: string, message = sentence): ToolOutput {
  return { content: `Error [${code}]: ${sentence}`, isError: true, error: { code, message } }
}

export function messageOf(error: unknown): string {
  if (error instanceof Error) return error.message || error.name
  if (typeof error === 'string') return error
  try {
    return JSON.stringify(error) ?? String(error)
  } catch {
    return String(error)
  }
}

export function abortReason(signal: AbortSignal): string {
  const reason: unknown = signal.reason
  if (reason === undefined) return 'aborted'
  if (reason instanceof Error && reason.name === 'AbortError') return reason.message || 'aborted'
  return messageOf(reason)
}

/** Returns why `value` is not a well-formed ToolOutput, or undefined when it is. */
export function checkOutput(value: unknown): string | undefined {
  if (value === null || typeof value !== 'object')
    return `expected an object with "content", got ${value === null ? 'null' : typeof value}`
  const output = value as ToolOutput
  if (typeof output.content === 'string') return undefined
  if (!Array.isArray(output.content)) return '"content" must be a string or an array of text/image blocks'
  for (const [index, block] of output.content.entries()) {
    if (block?.type === 'text' && typeof block.text === 'string') continue
    if (block?.type === 'image' && typeof block.mediaType === 'string' && typeof block.data === 'string') continue
    return `content[${index}] is not a text or image block`
  }
  return undefined
}

function contentBlocks(content: ToolOutput['content']): ToolResultContentBlock[] {
  // Blocks are copied: the session freezes what it appends, and the tool may reuse its objects.
  return typeof content === 'string' ? [{ type: 'text', text: content }] : content.map((block) => ({ ...block }))
}

function textOf(blocks: ToolResultContentBlock[]): string {
  return blocks
    .filter((block) => block.type === 'text')
    .map((block) => (block as { text: string }).text)
    .join('\n')
}

/** `error` is present exactly when the result is an error; a bare `isError` gets code `TOOL_ERROR`. */
export function toPayload(call: ToolCallRequest, output: ToolOutput): ToolResultPayload {
  const content = contentBlocks(output.content)
  const isError = output.isError === true || output.error !== undefined
  const payload: ToolResultPayload = {
    message: { role: 'tool', callId: call.callId, name: call.name, content, ...(isError ? { isError: true } : {}) },
  }
  if (isError) {
    const error: ToolError = output.error ?? { code: 'TOOL_ERROR', message: textOf(content).slice(0, 500) }
    payload.error = { code: String(error.code), message: String(error.message) }
  }
  if (output.meta !== undefined) payload.meta = output.meta
  return payload
}
