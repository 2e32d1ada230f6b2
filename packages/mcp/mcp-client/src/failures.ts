// How a connection's failures read: one line per failure (preferring what the process or the
// network said), and the `Error [CODE]: sentence` results a tool call answers with.
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js'
import type { ToolOutput } from '@dsh/tools'
import { sdk as loadedSdk } from './sdk.ts'
import { MESSAGE_TOO_LARGE, SubprocessStdioTransport, type TooLargeData } from './stdio-transport.ts'
import { McpAuthError } from '@dsh/mcp-oauth'

/** The sign-in failure behind an error (the SDK may wrap what the fetch threw). */
export function authErrorOf(error: unknown): McpAuthError | undefined {
  let e: unknown = error
  for (let depth = 0; e && depth < 5; depth++) {
    if (e instanceof McpAuthError) return e
    e = (e as { cause?: unknown }).cause
  }
  return undefined
}

export const REGISTRY_REASON = 'the tool registry refused it: '

export function firstLine(error: unknown): string {
  const text = error instanceof Error ? error.message : String(error)
  return text.split('\n')[0].slice(0, 300)
}

/** The first few issues of a zod error, as `path: message`. */
export function zodSummary(error: { issues?: Array<{ path: PropertyKey[]; message: string }> }): string {
  const issues = error.issues ?? []
  const parts = issues
    .slice(0, 3)
    .map((issue) => `${issue.path.length ? issue.path.map(String).join('.') : '(root)'}: ${issue.message}`)
  return parts.join('; ') + (issues.length > 3 ? `; and ${issues.length - 3} more` : '') || 'invalid'
}

export function formatBytes(bytes: number): string {
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KiB`
  return `${(bytes / 1024 / 1024).toFixed(1)} MiB`
}

export function failure(code: string, sentence: string): ToolOutput {
  return { content: `Error [${code}]: ${sentence}`, isError: true, error: { code, message: sentence } }
}

export function formatMs(ms: number): string {
  return ms % 1000 === 0 ? `${ms / 1000} s` : `${ms} ms`
}

export function isNetworkError(error: unknown): boolean {
  if (!(error instanceof Error)) return false
  if (error.name === 'TypeError' && /fetch failed/i.test(error.message)) return true
  const cause = (error as { cause?: { code?: string } }).cause
  return (
    typeof cause?.code === 'string' &&
    /^(ECONNREFUSED|ECONNRESET|EPIPE|ENOTFOUND|EHOSTUNREACH|UND_ERR_SOCKET)$/.test(cause.code)
  )
}

/** One line about why a connection failed, preferring what the process or network said. */
export function describeFailure(error: unknown, transport: Transport | undefined): string {
  if (transport instanceof SubprocessStdioTransport) {
    const exit = transport.describeExit()
    if (exit) return exit
  }
  if (loadedSdk && error instanceof loadedSdk.McpError && error.code === loadedSdk.ErrorCode.RequestTimeout)
    return 'the server did not answer in time'
  if (error instanceof Error) {
    const cause = (error as { cause?: { code?: string; message?: string } }).cause
    if (cause?.code)
      return `${error.message} (${cause.code}${cause.message && !cause.message.includes(cause.code) ? `: ${cause.message}` : ''})`
    return error.message.split('\n')[0] || error.name
  }
  return String(error)
}

/** Where a failed call happened, for its error result. */
export interface CallSite {
  server: string
  /** The model-facing tool name. */
  tool: string
  timeout: number
  explain(error: unknown): string
}

/**
 * The error result of a failed call (not a cancelled one); `lost` is set when the connection
 * itself broke (the caller restarts it).
 */
export function callFailure(error: unknown, at: CallSite): { output: ToolOutput; lost?: string } {
  const { ErrorCode, McpError } = loadedSdk!
  if (
    error instanceof McpError &&
    error.code === MESSAGE_TOO_LARGE &&
    (error.data as TooLargeData | undefined)?.reason === 'message-too-large'
  ) {
    const data = error.data as TooLargeData
    return {
      output: failure(
        'MCP_TOO_LARGE',
        `the answer of tool "${at.tool}" (MCP server "${at.server}") was ${formatBytes(data.bytes)}, over the ${formatBytes(data.limit)} message cap, so it was dropped. Ask for less (a smaller range, a filter, a page).`,
      ),
    }
  }
  if (error instanceof McpError && error.code === ErrorCode.RequestTimeout) {
    return {
      output: failure(
        'MCP_TIMEOUT',
        `tool "${at.tool}" (MCP server "${at.server}") did not answer within ${formatMs(at.timeout)}; the request was cancelled on the server. Its effects, if any, may be partial.`,
      ),
    }
  }
  const auth = authErrorOf(error)
  if (auth) {
    return {
      output: failure(
        'MCP_AUTH',
        `MCP server "${at.server}" refused the call to "${at.tool}" and signing in again did not work: ${at.explain(auth.message)}`,
      ),
    }
  }
  if ((error instanceof McpError && error.code === ErrorCode.ConnectionClosed) || isNetworkError(error)) {
    const reason = at.explain(error)
    return {
      lost: reason,
      output: failure(
        'MCP_DISCONNECTED',
        `the connection to MCP server "${at.server}" was lost during the call (${reason}); it is being restarted. The tool may or may not have run; check before calling it again.`,
      ),
    }
  }
  const message = at.explain(error instanceof Error ? error.message : String(error))
  return { output: failure('MCP_ERROR', `MCP server "${at.server}" refused the call to "${at.tool}": ${message}`) }
}
