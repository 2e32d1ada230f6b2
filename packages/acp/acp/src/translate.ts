// Pure mapping between the dsh vocabulary (session events, turn results, tool calls) and ACP
// shapes (session updates, stop reasons, prompt content). No I/O here: the server feeds events in
// and sends what comes out, so both live streaming and history replay share one mapping.
import { isAbsolute, resolve } from 'node:path'
import type * as acp from '@agentclientprotocol/sdk'
import type { TurnResult } from '@dsh/agent'
import type { UserContentBlock } from '@dsh/llm'
import { CallIdentities, type AnySessionEvent } from '@dsh/session'

export type ToolKind = acp.ToolKind

/** Default `kind` of the tools this repository ships; other names are `other` unless configured. */
export const DEFAULT_TOOL_KINDS: Readonly<Record<string, ToolKind>> = {
  read: 'read',
  read_image: 'read',
  write: 'edit',
  edit: 'edit',
  bash: 'execute',
  grep: 'search',
  glob: 'search',
  todo_write: 'think',
  web_fetch: 'fetch',
  web_search: 'fetch',
}

/** A full-text before/after pair captured around a file tool call (see the server's exec hook). */
export interface CapturedDiff {
  path: string
  oldText: string | null
  newText: string
}

export interface TranslatorOptions {
  sessionId: string
  cwd: string
  toolKinds: Readonly<Record<string, ToolKind>>
  /** Text content of one tool result shown to the client is cut to this many characters. */
  maxToolOutputChars: number
}

type Update = acp.SessionUpdate

const text = (value: string): acp.ContentBlock => ({ type: 'text', text: value })

function parseArgs(raw: string): Record<string, unknown> {
  try {
    const value: unknown = raw.trim() === '' ? {} : JSON.parse(raw)
    return value && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : {}
  } catch {
    return {}
  }
}

const str = (v: unknown): string | undefined => (typeof v === 'string' && v.trim() !== '' ? v : undefined)

function clip(value: string, max: number): string {
  if (value.length <= max) return value
  return `${value.slice(0, max)}\n… [${value.length - max} more characters not shown]`
}

/** Title shown for a tool call: its `description` argument, else a short summary of its input. */
export function toolTitle(name: string, args: Record<string, unknown>): string {
  const description = str(args.description)
  if (description) return description
  const file = str(args.file_path) ?? str(args.path)
  const command = str(args.command)
  const pattern = str(args.pattern)
  if (command) return clip(command.split('\n')[0], 120)
  if (pattern) return file ? `${name} ${pattern} in ${file}` : `${name} ${pattern}`
  if (file) return `${name} ${file}`
  return name
}

/** Files a tool call touches, absolute (relative paths resolve against the session cwd). */
export function toolLocations(args: Record<string, unknown>, cwd: string): acp.ToolCallLocation[] {
  const file = str(args.file_path) ?? str(args.path)
  if (!file) return []
  const path = isAbsolute(file) ? file : resolve(cwd, file)
  const line =
    typeof args.offset === 'number' && Number.isInteger(args.offset) && args.offset > 0 ? args.offset : undefined
  return [line ? { path, line } : { path }]
}

/** One diff entry per hunk of a unified diff (fallback when no full-text capture exists). */
export function diffHunks(path: string, unified: string): acp.ToolCallContent[] {
  const out: acp.ToolCallContent[] = []
  let old: string[] | undefined
  let neu: string[] = []
  const flush = () => {
    if (old) out.push({ type: 'diff', path, oldText: old.join('\n'), newText: neu.join('\n') })
    old = undefined
    neu = []
  }
  for (const line of unified.split('\n')) {
    if (line.startsWith('@@')) {
      flush()
      old = []
      continue
    }
    if (!old) continue
    if (line.startsWith('\\')) continue
    const tag = line[0]
    const body = line.slice(1)
    if (tag === ' ') {
      old.push(body)
      neu.push(body)
    } else if (tag === '-') old.push(body)
    else if (tag === '+') neu.push(body)
  }
  flush()
  return out
}

export function planEntries(todos: unknown): acp.PlanEntry[] {
  if (!Array.isArray(todos)) return []
  return todos.flatMap((t): acp.PlanEntry[] => {
    if (!t || typeof t !== 'object') return []
    const todo = t as Record<string, unknown>
    const content = str(todo.content) ?? str(todo.text) ?? str(todo.title) ?? str(todo.activeForm)
    if (!content) return []
    const raw = String(todo.status ?? (todo.done === true ? 'completed' : 'pending'))
    const status: acp.PlanEntryStatus =
      raw === 'completed' || raw === 'done'
        ? 'completed'
        : raw === 'in_progress' || raw === 'active'
          ? 'in_progress'
          : 'pending'
    const p = String(todo.priority ?? 'medium')
    const priority: acp.PlanEntryPriority = p === 'high' || p === 'low' ? p : 'medium'
    return [{ content, status, priority }]
  })
}

/** Plan entries from a Markdown plan: its list items (or every non-empty line), pending. */
export function planFromText(plan: string): acp.PlanEntry[] {
  const lines = plan
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line !== '')
  const items = lines.filter((line) => /^([-*+]|\d+[.)])\s+/.test(line))
  return (items.length > 0 ? items : lines).map((line) => ({
    content: line.replace(/^([-*+]|\d+[.)])\s+/, ''),
    status: 'pending' as const,
    priority: 'medium' as const,
  }))
}

interface CallInfo {
  name: string
  args: Record<string, unknown>
}

/**
 * Turns session events into ACP updates for one session. Stateful: it remembers tool call names
 * and arguments (for result mapping) and whether the current step streamed its text.
 */
interface CompactionData {
  id?: string
  reason?: string
  tokensBefore?: number
  tokensAfter?: number
  status?: string
  error?: { message?: string }
}

export class Translator {
  private readonly calls = new Map<string, CallInfo>()
  /**
   * ACP wants `toolCallId` unique in the session. The agent loop logs session-unique call ids,
   * but a log written before it did may repeat one (every turn's first call `call_0_0`): each
   * logged call is named through CallIdentities in log order (the names the loop gives when it
   * resumes such a log), and a result goes to the latest call with its logged id.
   */
  private readonly identities = new CallIdentities()
  private readonly toolCallIds = new Map<string, string>()
  private readonly diffs = new Map<string, CapturedDiff>()
  private streamedText = false
  private streamedThought = false

  constructor(private readonly options: TranslatorOptions) {}

  /** Records a before/after capture for a call; used by the next `tool/result` of that call. */
  captureDiff(callId: string, diff: CapturedDiff): void {
    this.diffs.set(callId, diff)
  }

  kind(name: string): ToolKind {
    return this.options.toolKinds[name] ?? 'other'
  }

  /** Updates for one live event. `replay` is true for history sent by `session/load`. */
  translate(event: AnySessionEvent, replay = false): Update[] {
    switch (event.type) {
      case 'step/start':
        this.streamedText = false
        this.streamedThought = false
        return []
      case 'user/message': {
        // Only the human's words are the user's message; injected context is not shown.
        if (!replay || event.data.source.kind !== 'human') return []
        return event.data.content.map((block) => ({ sessionUpdate: 'user_message_chunk', content: userBlock(block) }))
      }
      case 'assistant/chunk': {
        if (replay) return []
        const chunk = event.data.chunk
        if (chunk.kind === 'text-delta' && chunk.text !== '') {
          this.streamedText = true
          return [{ sessionUpdate: 'agent_message_chunk', content: text(chunk.text) }]
        }
        if (chunk.kind === 'reasoning-delta' && chunk.text !== '') {
          this.streamedThought = true
          return [{ sessionUpdate: 'agent_thought_chunk', content: text(chunk.text) }]
        }
        return []
      }
      case 'assistant/message': {
        // Live text already went out as chunks; an adapter that did not stream still shows up.
        const out: Update[] = []
        for (const block of event.data.message.content) {
          if (block.type === 'reasoning' && block.text && (replay || !this.streamedThought)) {
            out.push({ sessionUpdate: 'agent_thought_chunk', content: text(block.text) })
          } else if (block.type === 'text' && block.text && (replay || !this.streamedText)) {
            out.push({ sessionUpdate: 'agent_message_chunk', content: text(block.text) })
          }
        }
        return out
      }
      case 'tool/call': {
        const { callId, name } = event.data
        const toolCallId = this.identities.assign(callId)
        this.toolCallIds.set(callId, toolCallId)
        const args = parseArgs(event.data.arguments)
        this.calls.set(callId, { name, args })
        const locations = toolLocations(args, this.options.cwd)
        return [
          {
            sessionUpdate: 'tool_call',
            toolCallId,
            title: toolTitle(name, args),
            kind: this.kind(name),
            status: 'pending',
            rawInput: args,
            ...(locations.length ? { locations } : {}),
          },
        ]
      }
      case 'tool/result': {
        const { message, error, meta } = event.data
        const call = this.calls.get(message.callId) ?? { name: message.name, args: {} }
        this.calls.delete(message.callId)
        const failed = Boolean(error || message.isError)
        const content = this.resultContent(message.callId, call, message.content, meta, failed)
        const update: Update = {
          sessionUpdate: 'tool_call_update',
          toolCallId: this.toolCallIds.get(message.callId) ?? message.callId,
          status: failed ? 'failed' : 'completed',
          content,
        }
        if (error) update.rawOutput = { error }
        return [update]
      }
      default: {
        const type = event.type as string
        if (type === 'todo/write') {
          const entries = planEntries((event.data as { todos?: unknown }).todos)
          return [{ sessionUpdate: 'plan', entries }]
        }
        if (type === 'plan/mode') {
          // A plan leaving plan mode (approved) is shown as the session's plan: one entry per item.
          const plan = (event.data as { plan?: unknown }).plan
          return typeof plan === 'string' && plan.trim() !== ''
            ? [{ sessionUpdate: 'plan', entries: planFromText(plan) }]
            : []
        }
        if (type.startsWith('compaction/') && !replay) {
          const note = this.compactionNote(type, event.data as CompactionData)
          return note ? [{ sessionUpdate: 'agent_message_chunk', content: text(note) }] : []
        }
        return []
      }
    }
  }

  private compactionBefore = new Map<string, number>()

  /** Compaction is reported to the editor as a short message line (issue 11). */
  private compactionNote(type: string, data: CompactionData): string | undefined {
    if (type === 'compaction/start') {
      if (data.id && typeof data.tokensBefore === 'number') this.compactionBefore.set(data.id, data.tokensBefore)
      return `\n[compacting the conversation (${data.reason ?? 'auto'})...]\n`
    }
    if (type !== 'compaction/end') return undefined
    const before = data.id ? this.compactionBefore.get(data.id) : undefined
    if (data.id) this.compactionBefore.delete(data.id)
    if (data.status === 'compacted') {
      const sizes =
        before !== undefined && typeof data.tokensAfter === 'number'
          ? `: ~${before} -> ~${data.tokensAfter} tokens`
          : ''
      return `[conversation compacted${sizes}]\n`
    }
    return `[compaction failed: ${data.error?.message ?? 'unknown error'}; history unchanged]\n`
  }

  private resultContent(
    callId: string,
    call: CallInfo,
    blocks: readonly { type: string; text?: string; data?: string; mediaType?: string }[],
    meta: { [key: string]: unknown } | undefined,
    failed: boolean,
  ): acp.ToolCallContent[] {
    const captured = this.diffs.get(callId)
    this.diffs.delete(callId)
    if (!failed && captured) {
      return [{ type: 'diff', path: captured.path, oldText: captured.oldText, newText: captured.newText }]
    }
    if (!failed && meta && typeof meta.path === 'string') {
      if (typeof meta.diff === 'string') {
        const hunks = diffHunks(meta.path, meta.diff)
        if (hunks.length) return hunks
      }
      if (call.name === 'write' && meta.created === true && typeof call.args.content === 'string') {
        return [{ type: 'diff', path: meta.path, oldText: null, newText: call.args.content }]
      }
    }
    const out: acp.ToolCallContent[] = []
    for (const block of blocks) {
      if (block.type === 'text' && block.text) {
        out.push({ type: 'content', content: text(clip(block.text, this.options.maxToolOutputChars)) })
      } else if (block.type === 'image' && block.data && block.mediaType) {
        out.push({ type: 'content', content: { type: 'image', data: block.data, mimeType: block.mediaType } })
      }
    }
    return out
  }
}

function userBlock(block: UserContentBlock): acp.ContentBlock {
  return block.type === 'text' ? text(block.text) : { type: 'image', data: block.data, mimeType: block.mediaType }
}

/** Maps the end of a turn to an ACP stop reason; undefined means the turn failed (an error response). */
export function stopReason(result: TurnResult, lastFinish?: string): acp.StopReason | undefined {
  switch (result.reason) {
    case 'completed':
      return lastFinish === 'refusal' || lastFinish === 'content-filter' ? 'refusal' : 'end_turn'
    case 'max-tokens':
      return 'max_tokens'
    case 'cancelled':
    case 'interrupted':
      return 'cancelled'
    case 'blocked':
      return result.error?.code === 'MAX_STEPS' ? 'max_turn_requests' : undefined
    case 'error':
      return result.error?.code === 'REFUSAL' ? 'refusal' : undefined
    default:
      return undefined
  }
}

export class PromptContentError extends Error {}

export interface PromptOptions {
  images: boolean
}

/**
 * Converts ACP prompt content into the user message the model sees. Text passes through; a
 * resource link becomes a one-line reference; an embedded text resource is wrapped in a
 * `<resource>` element naming its URI; images pass through only when enabled.
 */
export function promptToBlocks(prompt: readonly acp.ContentBlock[], options: PromptOptions): UserContentBlock[] {
  const out: UserContentBlock[] = []
  for (const [i, block] of prompt.entries()) {
    switch (block.type) {
      case 'text':
        out.push({ type: 'text', text: block.text })
        break
      case 'resource_link': {
        const label = block.title ?? block.name
        const extra = [block.mimeType, block.description].filter(Boolean).join('; ')
        out.push({ type: 'text', text: `[Referenced resource: ${label} <${block.uri}>${extra ? ` (${extra})` : ''}]` })
        break
      }
      case 'resource': {
        const r = block.resource
        if ('text' in r) {
          const mime = r.mimeType ? ` mimeType="${r.mimeType}"` : ''
          out.push({ type: 'text', text: `<resource uri="${r.uri}"${mime}>\n${r.text}\n</resource>` })
        } else {
          out.push({
            type: 'text',
            text: `[Attached binary resource ${r.uri}${r.mimeType ? ` (${r.mimeType})` : ''}: not shown]`,
          })
        }
        break
      }
      case 'image':
        if (!options.images)
          throw new PromptContentError(
            `prompt[${i}]: image content is not accepted (promptCapabilities.image is false)`,
          )
        out.push({ type: 'image', mediaType: block.mimeType, data: block.data })
        break
      default:
        throw new PromptContentError(`prompt[${i}]: ${(block as { type: string }).type} content is not accepted`)
    }
  }
  if (out.length === 0) throw new PromptContentError('prompt is empty')
  return out
}
