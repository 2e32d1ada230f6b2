// MCP `tools/call` results to tool outputs. Text and images pass through as blocks; everything the
// model cannot take as a block (resource links, embedded resources, audio, structured content) is
// described in text. Oversized text is left to the spill policy (`tools/post-execute`), which sees
// an ordinary text result.
import type { ToolOutput, ToolResultContentBlock } from '@dsh/tools'

interface McpContent {
  type: string
  text?: string
  data?: string
  mimeType?: string
  uri?: string
  name?: string
  title?: string
  description?: string
  resource?: { uri?: string; mimeType?: string; text?: string; blob?: string }
}

/** The fields of a `CallToolResult` this mapping reads (plus the pre-2025 `toolResult` form). */
export interface McpCallResult {
  content?: unknown
  structuredContent?: unknown
  isError?: boolean
  toolResult?: unknown
}

const base64Bytes = (data: string) => Math.floor((data.replace(/=+$/, '').length * 3) / 4)

function describeBytes(bytes: number): string {
  if (bytes < 1024) return `${bytes} bytes`
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KiB`
  return `${(bytes / 1024 / 1024).toFixed(1)} MiB`
}

function block(item: McpContent): ToolResultContentBlock {
  switch (item.type) {
    case 'text':
      return { type: 'text', text: typeof item.text === 'string' ? item.text : '' }
    case 'image':
      if (typeof item.data === 'string' && typeof item.mimeType === 'string')
        return { type: 'image', mediaType: item.mimeType, data: item.data }
      return { type: 'text', text: '[image without data or MIME type]' }
    case 'audio':
      return {
        type: 'text',
        text: `[audio (${item.mimeType ?? 'unknown type'}, ${describeBytes(base64Bytes(item.data ?? ''))}) not shown: audio cannot be passed to the model]`,
      }
    case 'resource_link': {
      const label = item.title ?? item.name ?? item.uri ?? 'resource'
      const parts = [`Resource link: ${label} <${item.uri ?? '?'}>`]
      if (item.mimeType) parts.push(`(${item.mimeType})`)
      if (item.description) parts.push(`- ${item.description}`)
      return { type: 'text', text: parts.join(' ') }
    }
    case 'resource': {
      const resource = item.resource ?? {}
      const head = `Resource <${resource.uri ?? '?'}>${resource.mimeType ? ` (${resource.mimeType})` : ''}`
      if (typeof resource.text === 'string') return { type: 'text', text: `${head}:\n${resource.text}` }
      if (typeof resource.blob === 'string') {
        if (resource.mimeType?.startsWith('image/'))
          return { type: 'image', mediaType: resource.mimeType, data: resource.blob }
        return {
          type: 'text',
          text: `${head}: binary content, ${describeBytes(base64Bytes(resource.blob))}, not shown`,
        }
      }
      return { type: 'text', text: `${head}: empty` }
    }
    default:
      return { type: 'text', text: `[content of type ${JSON.stringify(item.type)} not shown]` }
  }
}

/** Joins adjacent text blocks so the result reads as one text when it has no images. */
function merge(blocks: ToolResultContentBlock[]): ToolResultContentBlock[] {
  const out: ToolResultContentBlock[] = []
  for (const item of blocks) {
    const last = out.at(-1)
    if (item.type === 'text' && last?.type === 'text')
      out[out.length - 1] = { type: 'text', text: `${last.text}\n${item.text}` }
    else out.push(item)
  }
  return out
}

export function mapResult(result: McpCallResult, meta: { server: string; tool: string }): ToolOutput {
  const items = Array.isArray(result.content) ? (result.content as McpContent[]) : []
  const blocks = items.filter((item) => item !== null && typeof item === 'object').map(block)
  if (result.structuredContent !== undefined) {
    const json = JSON.stringify(result.structuredContent)
    // Servers usually also send the same JSON as text; it is shown once.
    const repeated = blocks.some((b) => b.type === 'text' && safeParseEquals(b.text, result.structuredContent))
    if (!repeated) blocks.push({ type: 'text', text: blocks.length === 0 ? json : `Structured result: ${json}` })
  }
  if (blocks.length === 0 && result.toolResult !== undefined)
    blocks.push({ type: 'text', text: JSON.stringify(result.toolResult) })
  const content = merge(blocks)
  const text = content
    .filter((b) => b.type === 'text')
    .map((b) => (b as { text: string }).text)
    .join('\n')
  const shown = content.length === 0 ? '(the tool returned no content)' : content
  const toolMeta = { mcp: { server: meta.server, tool: meta.tool } }
  if (result.isError === true) {
    const message = text.trim() === '' ? 'the tool reported an error without a message' : text.slice(0, 500)
    return {
      content: shown,
      isError: true,
      error: { code: 'MCP_TOOL_ERROR', message },
      meta: toolMeta,
    }
  }
  if (content.length === 1 && content[0].type === 'text') return { content: content[0].text, meta: toolMeta }
  return { content: shown, meta: toolMeta }
}

function safeParseEquals(text: string, value: unknown): boolean {
  try {
    return JSON.stringify(JSON.parse(text)) === JSON.stringify(value)
  } catch {
    return false
  }
}
