// One tool call as a compact block: a header line (state bullet, tool name, what it acts on) and
// a short body chosen by tool: the tail of a bash run with its exit code, a coloured diff for
// edits and writes, a one-line summary for reads and searches. `expanded` shows everything.
import { truncateToWidth, wrapTextWithAnsi, type Component } from '@mariozechner/pi-tui'
import type { Palette } from './theme.ts'

export type ToolState = 'pending' | 'running' | 'done' | 'error'

export interface ToolResultView {
  text: string
  isError: boolean
  errorMessage?: string
  meta?: { [key: string]: unknown }
}

/** A running call's latest progress (the `tool/progress` session event, e.g. from an MCP server). */
export interface ToolProgressView {
  progress: number
  total?: number
  message?: string
}

/** Cells of the progress bar. */
export const PROGRESS_CELLS = 10

/** `[■■■□□□□□□□] 3/10 message`, or `3 message` without a total. */
export function progressLine(view: ToolProgressView): string {
  const round = (n: number) => String(Math.round(n * 100) / 100)
  const total = view.total
  const count = total !== undefined ? `${round(view.progress)}/${round(total)}` : round(view.progress)
  const message = view.message ? ` ${oneLine(view.message)}` : ''
  if (total === undefined || !(total > 0)) return `${count}${message}`
  const filled = Math.round(Math.min(1, Math.max(0, view.progress / total)) * PROGRESS_CELLS)
  return `[${'■'.repeat(filled)}${'□'.repeat(PROGRESS_CELLS - filled)}] ${count}${message}`
}

/** Lines of a bash tail shown when collapsed. */
export const BASH_TAIL_LINES = 5
/** Diff lines shown when collapsed. */
export const DIFF_LINES = 16
/** Body lines shown when expanded (a guard against megabyte outputs). */
export const EXPANDED_LINES = 400

function parseArgs(raw: string): Record<string, unknown> {
  try {
    const value = JSON.parse(raw)
    return value && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : {}
  } catch {
    return {}
  }
}

const oneLine = (text: string) => text.replace(/\s+/g, ' ').trim()
const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? '' : 's'}`

/** What the call acts on, in one line: the command, the path, the pattern, or the first string argument. */
export function toolSubject(name: string, rawArgs: string): string {
  const args = parseArgs(rawArgs)
  const str = (key: string) => (typeof args[key] === 'string' ? (args[key] as string) : undefined)
  switch (name) {
    case 'bash':
      return oneLine(str('command') ?? '')
    case 'grep':
    case 'glob': {
      const where = str('path')
      return `${str('pattern') ?? ''}${where ? `  in ${where}` : ''}`
    }
    case 'todo_write':
      return Array.isArray(args.todos) ? plural(args.todos.length, 'item') : ''
    default: {
      const first =
        str('file_path') ?? str('path') ?? Object.values(args).find((v): v is string => typeof v === 'string')
      return first ? oneLine(first) : ''
    }
  }
}

/** Splits bash result text into output lines and the trailing `[exit code: N]`-style status. */
function bashParts(result: ToolResultView): { lines: string[]; status?: string; exitCode?: number } {
  const lines = result.text.split('\n')
  let status: string | undefined
  while (
    lines.length &&
    /^\[(exit code|terminated|timed out|cancelled|could not start|note)/.test(lines[lines.length - 1])
  ) {
    const line = lines.pop()!
    if (!line.startsWith('[note')) status ??= line
  }
  if (lines.length === 1 && lines[0] === '(no output)') lines.length = 0
  const exitCode = typeof result.meta?.exitCode === 'number' ? result.meta.exitCode : undefined
  return { lines, status, exitCode }
}

export class ToolCard implements Component {
  state: ToolState = 'pending'
  expanded = false
  result?: ToolResultView
  progress?: ToolProgressView
  private cache?: { width: number; key: string; lines: string[] }

  constructor(
    readonly callId: string,
    public name: string,
    public args: string,
    private readonly p: Palette,
  ) {}

  setArgs(args: string): void {
    this.args = args
    this.cache = undefined
  }

  setRunning(): void {
    if (this.state === 'pending') this.state = 'running'
    this.cache = undefined
  }

  /** The latest progress the running call reported; shown until its result arrives. */
  setProgress(progress: ToolProgressView): void {
    this.progress = progress
    this.cache = undefined
  }

  setResult(result: ToolResultView): void {
    this.result = { ...result, text: sanitize(result.text) }
    this.state = result.isError ? 'error' : 'done'
    this.cache = undefined
  }

  /** Ends a call that never got a result (the turn was cancelled). */
  setAbandoned(): void {
    if (this.state === 'pending' || this.state === 'running') {
      this.state = 'error'
      this.result = { text: '', isError: true, errorMessage: 'not run: the turn ended first' }
      this.cache = undefined
    }
  }

  setExpanded(expanded: boolean): void {
    if (this.expanded === expanded) return
    this.expanded = expanded
    this.cache = undefined
  }

  invalidate(): void {
    this.cache = undefined
  }

  render(width: number): string[] {
    const key = `${this.state}:${this.expanded}`
    if (this.cache && this.cache.width === width && this.cache.key === key) return this.cache.lines
    const lines = [
      this.header(width),
      ...this.body(Math.max(10, width - 4)).map((l, i) =>
        truncateToWidth(`  ${i === 0 ? this.p.gray('⎿') : ' '} ${l}`, width),
      ),
    ]
    this.cache = { width, key, lines }
    return lines
  }

  private header(width: number): string {
    const { p } = this
    const bullet = this.state === 'done' ? p.green('●') : this.state === 'error' ? p.red('●') : p.yellow('○')
    const subject = toolSubject(this.name, this.args)
    return truncateToWidth(`${bullet} ${p.bold(this.name)}${subject ? ` ${p.dim(subject)}` : ''}`, width)
  }

  private body(width: number): string[] {
    const { p, result } = this
    if (!result) {
      if (this.state !== 'running') return []
      return [p.gray(this.progress ? truncateToWidth(sanitize(progressLine(this.progress)), width) : 'running…')]
    }
    const cap = (lines: string[], max: number, what: string): string[] =>
      lines.length <= max
        ? lines
        : [...lines.slice(0, max), p.gray(`… ${plural(lines.length - max, what)} more (ctrl+o to expand)`)]
    if (this.name === 'bash') {
      const { lines, status, exitCode } = bashParts(result)
      const shown = this.expanded ? lines.slice(-EXPANDED_LINES) : lines.slice(-BASH_TAIL_LINES)
      const hidden = lines.length - shown.length
      const out = [
        ...(hidden > 0
          ? [p.gray(`… ${plural(hidden, 'line')} above${this.expanded ? '' : ' (ctrl+o to expand)'}`)]
          : []),
        ...shown.map((l) => p.dim(l)),
      ]
      const code = exitCode !== undefined ? `exit ${exitCode}` : (status ?? '').replace(/^\[|\]$/g, '')
      if (code) out.push(exitCode === 0 ? p.green(code) : p.red(code))
      return out
    }
    if (result.isError) {
      const message = result.errorMessage ?? result.text.split('\n')[0] ?? 'failed'
      return wrapTextWithAnsi(p.red(message), width).slice(0, this.expanded ? EXPANDED_LINES : 3)
    }
    const diff = typeof result.meta?.diff === 'string' ? sanitize(result.meta.diff) : undefined
    if (diff !== undefined) {
      const lines = diffLines(diff, p)
      const added = diff.split('\n').filter((l) => l.startsWith('+') && !l.startsWith('+++')).length
      const removed = diff.split('\n').filter((l) => l.startsWith('-') && !l.startsWith('---')).length
      return [
        p.gray(`${plural(added, 'line')} added, ${plural(removed, 'line')} removed`),
        ...cap(lines, this.expanded ? EXPANDED_LINES : DIFF_LINES, 'line'),
      ]
    }
    const text = result.text.replace(/\n+$/, '')
    const count = text === '' ? 0 : text.split('\n').length
    if (this.expanded)
      return cap(
        text.split('\n').map((l) => p.dim(l)),
        EXPANDED_LINES,
        'line',
      )
    switch (this.name) {
      case 'read':
        return [p.gray(`read ${plural(count, 'line')}`)]
      case 'grep':
      case 'glob':
        return [p.gray(count === 0 ? 'no matches' : `${plural(count, 'line')} of results`)]
      default:
        return text === '' ? [] : [p.gray(truncateToWidth(oneLine(text), width))]
    }
  }
}

/** A unified diff as coloured lines, without its file headers. */
export function diffLines(diff: string, p: Palette): string[] {
  const out: string[] = []
  for (const line of diff.split('\n')) {
    if (
      line.startsWith('===') ||
      line.startsWith('---') ||
      line.startsWith('+++') ||
      line.startsWith('Index:') ||
      line === ''
    )
      continue
    if (line.startsWith('@@')) out.push(p.cyan(line))
    else if (line.startsWith('+')) out.push(p.green(line))
    else if (line.startsWith('-')) out.push(p.red(line))
    else if (line.startsWith('\\')) out.push(p.gray(line))
    else out.push(p.dim(line))
  }
  return out
}

/**
 * Text from a tool as plain printable lines: escape sequences and control characters removed
 * (a command's own colours would break the layout), tabs expanded to four spaces.
 */
export function sanitize(text: string): string {
  return (
    text
      .replace(/\r\n/g, '\n')
      // CSI, OSC and other escape sequences.
      .replace(/\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)|[@-Z\\-_])/g, '')
      .replace(/\t/g, '    ')
      .replace(/[\x00-\x08\x0b-\x1f\x7f]/g, '')
  )
}
