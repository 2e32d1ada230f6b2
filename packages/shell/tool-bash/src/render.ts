// The model-visible text of one bash call: merged output (head and tail around a marker when
// long), defaulting notes, and a status line. Pure: the same result always renders the same text.
import type { ShellResult, ShellSpec } from '@dsh/shell'
import type { JsonObject, ToolOutput } from '@dsh/tools'

function trimOneNewline(text: string): string {
  return text.endsWith('\n') ? text.slice(0, -1) : text
}

/** The output section: whole, or head + omission marker + tail. */
export function renderOutput(output: ShellResult['output']): string {
  if (!output.truncated) return trimOneNewline(output.head)
  const where = output.spillPath ? `; the full output (${output.totalBytes} bytes) is in ${output.spillPath}` : ''
  const head = output.head.endsWith('\n') || output.head === '' ? output.head : `${output.head}\n`
  return `${head}[... ${output.omittedBytes} bytes omitted${where} ...]\n${trimOneNewline(output.tail)}`
}

function statusLine(result: ShellResult, spec: ShellSpec): string {
  switch (result.status) {
    case 'exited':
      return `[exit code: ${result.exitCode}]`
    case 'signaled':
      return `[terminated by signal ${result.signal}]`
    case 'timeout':
      return `[timed out after ${spec.timeoutMs} ms; the command and its child processes were stopped with ${result.escalation ?? 'SIGTERM'}]`
    case 'cancelled':
      return '[cancelled; the command and its child processes were stopped]'
    case 'failed':
      // A command its provider lost after it started (a remote machine, a dropped connection).
      if (result.error?.started) return `[lost after it started: ${result.error.message}]`
      return `[could not start: ${result.error?.message ?? 'unknown error'}]`
  }
}

export function renderResult(result: ShellResult, spec: ShellSpec): ToolOutput {
  const parts: string[] = []
  const body = renderOutput(result.output)
  parts.push(body === '' ? '(no output)' : body)
  for (const note of spec.notes) parts.push(`[note: ${note}]`)
  parts.push(statusLine(result, spec))
  const meta: JsonObject = {
    status: result.status,
    exitCode: result.exitCode,
    signal: result.signal,
    durationMs: result.durationMs,
    workdir: spec.cwd,
    timeoutMs: spec.timeoutMs,
    totalBytes: result.output.totalBytes,
    truncated: result.output.truncated,
  }
  if (result.output.spillPath) meta.spillPath = result.output.spillPath
  if (result.escalation) meta.escalation = result.escalation
  const output: ToolOutput = { content: parts.join('\n'), meta }
  if (result.status === 'timeout') {
    output.isError = true
    output.error = { code: 'TIMEOUT', message: `command timed out after ${spec.timeoutMs} ms` }
  } else if (result.status === 'cancelled') {
    output.isError = true
    output.error = { code: 'CANCELLED', message: 'command cancelled' }
  } else if (result.status === 'failed') {
    output.isError = true
    output.error = {
      code: result.error?.code ?? 'SPAWN_FAILED',
      message: result.error?.message ?? 'could not start the command',
    }
  }
  return output
}
