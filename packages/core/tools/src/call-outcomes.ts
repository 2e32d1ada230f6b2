// The module-level helpers of the tool registry's call pipeline: the innermost dispatch step,
// visibility and concurrency checks, the error results a call can end in, and the catalogue text.
import type { ToolSchema } from '@dsh/llm'
import { abortReason, errorOutput, messageOf } from './results.ts'
import type { ToolCallContext, ToolCallOrigin, ToolDefinition, ToolDenial, ToolMode, ToolOutput } from './types.ts'

/** The innermost `tools/execute` step: the tool body, raced against the per-call signal. */
export function dispatch(tool: ToolDefinition, args: unknown, call: ToolCallContext): Promise<ToolOutput> {
  const signal = call.signal
  if (signal.aborted) return Promise.resolve(cancelledBeforeStart(tool.name, signal))
  return new Promise<ToolOutput>((resolve) => {
    const onAbort = () => resolve(cancelled(tool.name, signal))
    signal.addEventListener('abort', onAbort, { once: true })
    new Promise<ToolOutput>((inner) => inner(tool.execute(args, call)))
      .then(resolve, (error) => resolve(signal.aborted ? cancelled(tool.name, signal) : toolError(tool.name, error)))
      .finally(() => signal.removeEventListener('abort', onAbort))
  })
}

/** Whether a call from `origin` may resolve to `def` under presentation `mode`. */
export function visible(def: ToolDefinition, mode: ToolMode, origin: ToolCallOrigin): boolean {
  const entry = def.codeEntry === true
  if (origin === 'code') return !entry
  if (mode === 'native') return !entry
  if (mode === 'code') return entry
  return true
}

export function isSafe(def: ToolDefinition, args: unknown): boolean {
  if (typeof def.concurrencySafe === 'function') {
    try {
      return def.concurrencySafe(args) === true
    } catch {
      return false
    }
  }
  return def.concurrencySafe === true
}

export function denied(name: string, decision: ToolDenial): ToolOutput {
  const code = decision.code ?? 'DENIED'
  return errorOutput(code, `the call to tool "${name}" was not run: ${decision.deny}`, decision.deny)
}

export function toolError(name: string, error: unknown): ToolOutput {
  const message = messageOf(error)
  return errorOutput('TOOL_ERROR', `tool "${name}" failed: ${message}`, message)
}

export function cancelled(name: string, signal: AbortSignal): ToolOutput {
  const reason = abortReason(signal)
  return errorOutput(
    'CANCELLED',
    `tool "${name}" was cancelled before it finished (${reason}); any effects it had may be partial.`,
    reason,
  )
}

export function cancelledBeforeStart(name: string, signal: AbortSignal): ToolOutput {
  const reason = abortReason(signal)
  return errorOutput(
    'CANCELLED',
    `tool "${name}" was cancelled before it started (${reason}); it had no effect.`,
    reason,
  )
}

export function internalError(name: string, stage: string, error: unknown, ran: boolean): ToolOutput {
  const message = `${stage}: ${messageOf(error)}`
  return errorOutput(
    'INTERNAL_ERROR',
    `the harness failed while handling tool "${name}" (${message}). ` +
      (ran ? 'The tool ran, but its result was lost.' : 'The tool did not run.'),
    message,
  )
}

export function schemaOf(def: ToolDefinition): ToolSchema {
  return { name: def.name, description: def.description, parameters: def.parameters }
}

/**
 * `summary`, else the description's first sentence (up to `. ` or a line break); one longer than
 * 110 characters is cut before its last colon or semicolon (else comma) within them.
 */
export function summaryOf(def: Pick<ToolDefinition, 'description' | 'summary'>): string {
  const given = typeof def.summary === 'string' ? def.summary.trim() : ''
  if (given !== '') return given
  const text = def.description.trim()
  const end = text.search(/\.(\s|$)|\n/)
  const first = (end < 0 ? text : text.slice(0, text[end] === '.' ? end + 1 : end)).trim()
  if (first.length <= 110) return first
  const head = first.slice(0, 110)
  const cut = Math.max(head.lastIndexOf(': '), head.lastIndexOf('; '))
  const at = cut > 20 ? cut : head.lastIndexOf(', ')
  return at > 20 ? first.slice(0, at) : `${head.trimEnd()}…`
}

/** The loader's description followed by one line per deferred tool. */
export function catalogue(description: string, held: ToolDefinition[]): string {
  return `${description.trimEnd()}\n${held.map((def) => `- ${def.name}: ${summaryOf(def)}`).join('\n')}`
}

export function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0
}
