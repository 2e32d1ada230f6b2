// Pure presentation data for tool calls: what a card shows, derived from a ToolNode (the call's
// parsed arguments and its logged result, `meta` included). No React, no strings for humans
// beyond what the tool itself produced; cards translate their own labels.
import type { JsonObject, ToolNode } from '@dsh/conversation-model'

const str = (value: unknown): string | undefined => (typeof value === 'string' ? value : undefined)
const num = (value: unknown): number | undefined =>
  typeof value === 'number' && Number.isFinite(value) ? value : undefined

/** `1.2 s`, `340 ms`, `2 min 5 s`. */
export function formatDuration(ms: number | undefined): string | undefined {
  if (ms === undefined || !Number.isFinite(ms) || ms < 0) return undefined
  if (ms < 1000) return `${Math.round(ms)} ms`
  if (ms < 60_000) return `${(ms / 1000).toFixed(ms < 10_000 ? 1 : 0)} s`
  const minutes = Math.floor(ms / 60_000)
  return `${minutes} min ${Math.round((ms % 60_000) / 1000)} s`
}

export interface ProgressView {
  /** `3/10` (or `3` without a total). */
  count: string
  /** 0..1 when the total is known and positive. */
  fraction?: number
  message?: string
}

/**
 * What a running call's latest progress shows: the count against the total and the message the
 * tool sent (MCP servers report progress this way). Undefined when the call is not running or
 * reported none.
 */
export function progressView(node: ToolNode): ProgressView | undefined {
  const p = node.progress
  if (!p || node.status !== 'running') return undefined
  const value = num(p.progress)
  if (value === undefined) return undefined
  const total = num(p.total)
  const round = (n: number) => String(Math.round(n * 100) / 100)
  return {
    count: total !== undefined ? `${round(value)}/${round(total)}` : round(value),
    ...(total !== undefined && total > 0 ? { fraction: Math.min(1, Math.max(0, value / total)) } : {}),
    ...(p.message ? { message: p.message } : {}),
  }
}

export interface BashView {
  command: string
  description?: string
  /** The output as the model saw it, without the final status line (shown as a badge). */
  output: string
  status?: string
  exitCode?: number | null
  signal?: string | null
  durationMs?: number
  truncated: boolean
  spillPath?: string
  totalBytes?: number
}

const STATUS_LINE =
  /\n?\[(exit code: -?\d+|terminated by signal [^\]]+|timed out after [^\]]*|cancelled; [^\]]*|could not start: [^\]]*)\]$/

export function bashView(node: ToolNode): BashView {
  const meta = node.result?.meta ?? {}
  const raw = node.result?.text ?? ''
  return {
    command: str(node.input?.command) ?? node.arguments,
    ...(str(node.input?.description) ? { description: str(node.input?.description) } : {}),
    output: raw.replace(STATUS_LINE, ''),
    ...(str(meta.status) ? { status: str(meta.status) } : {}),
    ...(meta.exitCode !== undefined ? { exitCode: num(meta.exitCode) ?? null } : {}),
    ...(meta.signal !== undefined ? { signal: str(meta.signal) ?? null } : {}),
    ...(num(meta.durationMs) !== undefined ? { durationMs: num(meta.durationMs) } : {}),
    truncated: meta.truncated === true,
    ...(str(meta.spillPath) ? { spillPath: str(meta.spillPath) } : {}),
    ...(num(meta.totalBytes) !== undefined ? { totalBytes: num(meta.totalBytes) } : {}),
  }
}

export type DiffLineType = 'add' | 'del' | 'ctx' | 'hunk' | 'meta'
export interface DiffLine {
  type: DiffLineType
  text: string
  oldNo?: number
  newNo?: number
}
export interface DiffView {
  oldPath?: string
  newPath?: string
  lines: DiffLine[]
  added: number
  removed: number
}

/** Parses a unified diff (one or more files) into typed lines with line numbers. */
export function parseUnifiedDiff(diff: string): DiffView {
  const view: DiffView = { lines: [], added: 0, removed: 0 }
  let oldNo = 0
  let newNo = 0
  let inHunk = false
  const rows = diff.split('\n')
  if (rows.at(-1) === '') rows.pop()
  for (const row of rows) {
    if (row.startsWith('@@')) {
      const m = /^@@ -(\d+)(?:,\d+)? \+(\d+)(?:,\d+)? @@/.exec(row)
      oldNo = m ? Number(m[1]) : 0
      newNo = m ? Number(m[2]) : 0
      inHunk = true
      view.lines.push({ type: 'hunk', text: row })
      continue
    }
    if (
      !inHunk ||
      row.startsWith('--- ') ||
      row.startsWith('+++ ') ||
      row.startsWith('====') ||
      row.startsWith('Index: ') ||
      row.startsWith('diff ')
    ) {
      if (row.startsWith('--- ')) view.oldPath = row.slice(4).replace(/^a\//, '').split('\t')[0]
      else if (row.startsWith('+++ ')) view.newPath = row.slice(4).replace(/^b\//, '').split('\t')[0]
      if (row.startsWith('--- ') || row.startsWith('+++ ') || row.startsWith('diff ')) inHunk = false
      continue
    }
    if (row.startsWith('+')) {
      view.lines.push({ type: 'add', text: row.slice(1), newNo: newNo++ })
      view.added++
    } else if (row.startsWith('-')) {
      view.lines.push({ type: 'del', text: row.slice(1), oldNo: oldNo++ })
      view.removed++
    } else if (row.startsWith('\\')) {
      view.lines.push({ type: 'meta', text: row })
    } else {
      view.lines.push({ type: 'ctx', text: row.slice(1), oldNo: oldNo++, newNo: newNo++ })
    }
  }
  return view
}

/** A new file's content as an all-added diff (the write tool logs no diff). */
export function additionDiff(content: string): DiffView {
  const rows = content.split('\n')
  if (rows.at(-1) === '') rows.pop()
  return {
    lines: rows.map((text, i) => ({ type: 'add' as const, text, newNo: i + 1 })),
    added: rows.length,
    removed: 0,
  }
}

export interface FileChangeView {
  path: string
  /** The absolute path the tool resolved, when it logged one. */
  absolutePath?: string
  created?: boolean
  diff?: DiffView
  /** The tool logged that the diff was too large to keep. */
  diffOmitted: boolean
}

/** edit / write / str_replace_editor (create, str_replace, insert): the file and its diff. */
export function fileChangeView(node: ToolNode): FileChangeView {
  const meta = node.result?.meta ?? {}
  const input = node.input ?? {}
  // The path as the model wrote it (usually relative to the session folder); the absolute one as a fallback.
  const path = str(input.file_path) ?? str(input.path) ?? str(meta.path) ?? '?'
  const created = typeof meta.created === 'boolean' ? meta.created : undefined
  let diff: DiffView | undefined
  if (typeof meta.diff === 'string') diff = parseUnifiedDiff(meta.diff)
  else if (node.name === 'write' && typeof input.content === 'string' && node.status !== 'error')
    diff = additionDiff(input.content)
  else if (node.status !== 'done' && typeof input.old_string === 'string' && typeof input.new_string === 'string') {
    // Not applied yet (or failed): show what the call asks for.
    diff = {
      lines: [
        ...input.old_string.split('\n').map((text) => ({ type: 'del' as const, text })),
        ...input.new_string.split('\n').map((text) => ({ type: 'add' as const, text })),
      ],
      added: input.new_string.split('\n').length,
      removed: input.old_string.split('\n').length,
    }
  }
  return {
    path,
    ...(str(meta.path) ? { absolutePath: str(meta.path) } : {}),
    ...(created !== undefined ? { created } : {}),
    ...(diff ? { diff } : {}),
    diffOmitted: meta.diffOmitted === true,
  }
}

/** Which of the tool's facts a one-line summary shows (read, grep, glob, ls and kin). */
export interface SummaryView {
  /** What was asked: a path, a pattern. */
  subject: string
  /** Message key of the counts line (`read.lines`, `grep.matches`, `glob.files`) and its values. */
  countsKey?: string
  counts?: Record<string, number>
}

export function summaryView(node: ToolNode): SummaryView {
  const meta = node.result?.meta ?? {}
  const input = node.input ?? {}
  switch (node.name) {
    case 'read':
    case 'read_image': {
      const subject = str(input.file_path) ?? str(meta.path) ?? '?'
      const total = num(meta.totalLines)
      if (total !== undefined && num(meta.firstLine) !== undefined) {
        return {
          subject,
          countsKey: 'read.lines',
          counts: { first: num(meta.firstLine)!, last: num(meta.lastLine) ?? total, total },
        }
      }
      return { subject }
    }
    case 'grep':
      return {
        subject: str(input.pattern) ?? '?',
        ...(num(meta.total) !== undefined
          ? { countsKey: 'grep.matches', counts: { total: num(meta.total)!, files: num(meta.files) ?? 0 } }
          : {}),
      }
    case 'glob':
      return {
        subject: str(input.pattern) ?? '?',
        ...(num(meta.total) !== undefined ? { countsKey: 'glob.files', counts: { total: num(meta.total)! } } : {}),
      }
    default: {
      const first = Object.values(input).find((v) => typeof v === 'string') as string | undefined
      return { subject: first ?? '' }
    }
  }
}

export interface TodoView {
  items: Array<{ content: string; status: string }>
}

export function todoView(node: ToolNode): TodoView {
  const todos = Array.isArray(node.input?.todos) ? (node.input!.todos as JsonObject[]) : []
  return { items: todos.map((todo) => ({ content: str(todo.content) ?? '', status: str(todo.status) ?? 'pending' })) }
}

/** Splits text into lines for the long-output viewer (a trailing newline adds no empty line). */
export function linesOf(text: string): string[] {
  if (text === '') return []
  const rows = text.split('\n')
  if (rows.at(-1) === '') rows.pop()
  return rows
}
