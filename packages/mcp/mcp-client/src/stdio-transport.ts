// An MCP stdio transport over the `ctx.subprocess` seam, so a local server runs in the mounted
// execution world (and its process group is terminated with the plugin) instead of being spawned
// behind the seam's back. Framing is the protocol's: one JSON-RPC message per line, parsed by the
// SDK. A line over `maxMessageBytes` is not buffered: its bytes are dropped as they arrive and the
// request it answers fails at once with a size error (see `oversized`).
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js'
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js'
import type { Sdk } from './sdk.ts'
import type { ProcessExit, ProcessHandle, SubprocessService } from '@dsh/subprocess'
import type { StdioServerSpec } from './config.ts'

const STDERR_KEEP = 4096
/** The largest message a server may send: the SDK's own stdio buffer cap (10 MiB). */
export const MAX_MESSAGE_BYTES = 10 * 1024 * 1024
/** How much of an oversized line's start and end is kept to find the request id it answers. */
const ID_WINDOW = 512
/** JSON-RPC error code of the synthesized answer to a request whose response was too large. */
export const MESSAGE_TOO_LARGE = -32001

/** The error data of a request failed because its answer was over the cap. */
export interface TooLargeData {
  reason: 'message-too-large'
  bytes: number
  limit: number
}

export class SubprocessStdioTransport implements Transport {
  onclose?: () => void
  onerror?: (error: Error) => void
  onmessage?: (message: JSONRPCMessage) => void

  private handle?: ProcessHandle
  /** The unfinished line: its chunks and their total size. */
  private pending: Buffer[] = []
  private pendingBytes = 0
  /** Set while the rest of an oversized line is being dropped. */
  private dropping?: { head: string; tail: string; bytes: number }
  /** Ids of requests sent and not yet answered (what an oversized answer can be attributed to). */
  private readonly outstanding = new Set<string | number>()
  private stderrTail = ''
  private closed = false
  /** How the process ended, once it has. */
  exit?: ProcessExit

  constructor(
    private readonly sdk: Sdk,
    private readonly subprocess: SubprocessService,
    private readonly spec: StdioServerSpec,
    private readonly graceMs: number,
    private readonly maxMessageBytes = MAX_MESSAGE_BYTES,
  ) {}

  /** The last few KiB the server wrote to stderr (for failure messages). */
  get stderr(): string {
    return this.stderrTail
  }

  /** One line describing how the process ended, or undefined while it runs. */
  describeExit(): string | undefined {
    const exit = this.exit
    if (!exit) return undefined
    if (exit.spawnError)
      return `could not start ${JSON.stringify(this.spec.command)}: ${exit.spawnError.code} (${exit.spawnError.message})`
    const how = exit.signal ? `was killed by ${exit.signal}` : `exited with code ${exit.code}`
    const last = lastLine(this.stderrTail)
    return `the server process ${how}${last ? `; its last stderr line: ${last}` : ''}`
  }

  async start(): Promise<void> {
    if (this.handle) throw new Error('SubprocessStdioTransport already started')
    const handle = this.subprocess.spawn({
      file: this.spec.command,
      args: this.spec.args,
      cwd: this.spec.cwd,
      env: { set: this.spec.env },
      kill: { graceMs: this.graceMs },
      stdin: 'pipe',
      retentionMode: 'none',
    })
    this.handle = handle
    handle.onOutput((chunk) => {
      if (chunk.stream === 'stderr') {
        this.stderrTail = (this.stderrTail + Buffer.from(chunk.data).toString('utf8')).slice(-STDERR_KEEP)
        return
      }
      this.take(Buffer.from(chunk.data))
    })
    void handle.exited.then((exit) => {
      this.exit = exit
      this.finish()
    })
  }

  async send(message: JSONRPCMessage): Promise<void> {
    if (this.closed || !this.handle) throw new Error(this.describeExit() ?? 'the server process is not running')
    if ('method' in message) {
      if ('id' in message) this.outstanding.add(message.id)
      else if (message.method === 'notifications/cancelled') {
        const cancelled = (message.params as { requestId?: unknown } | undefined)?.requestId
        if (typeof cancelled === 'string' || typeof cancelled === 'number') this.outstanding.delete(cancelled)
      }
    }
    this.handle.write(this.sdk.serializeMessage(message))
  }

  /** Splits stdout into lines; a line past the cap is dropped as it streams, never buffered whole. */
  private take(data: Buffer): void {
    let start = 0
    while (start < data.length) {
      const newline = data.indexOf(0x0a, start)
      const end = newline === -1 ? data.length : newline
      const piece = data.subarray(start, end)
      if (this.dropping) {
        this.dropping.bytes += piece.length
        this.dropping.tail = (
          this.dropping.tail + piece.subarray(Math.max(0, piece.length - ID_WINDOW)).toString('latin1')
        ).slice(-ID_WINDOW)
      } else if (this.pendingBytes + piece.length > this.maxMessageBytes) {
        const head = Buffer.concat([...this.pending, piece.subarray(0, ID_WINDOW)])
          .subarray(0, ID_WINDOW)
          .toString('latin1')
        const whole = Buffer.concat([...this.pending.slice(-1), piece])
        this.dropping = {
          head,
          tail: whole.subarray(Math.max(0, whole.length - ID_WINDOW)).toString('latin1'),
          bytes: this.pendingBytes + piece.length,
        }
        this.pending = []
        this.pendingBytes = 0
      } else if (piece.length > 0) {
        this.pending.push(piece)
        this.pendingBytes += piece.length
      }
      if (newline === -1) return
      start = newline + 1
      if (this.dropping) {
        const dropped = this.dropping
        this.dropping = undefined
        this.oversized(dropped)
      } else {
        const line = Buffer.concat(this.pending).toString('utf8').replace(/\r$/, '')
        this.pending = []
        this.pendingBytes = 0
        if (line.trim() !== '') this.deliver(line)
      }
    }
  }

  private deliver(line: string): void {
    let message: JSONRPCMessage
    try {
      message = this.sdk.deserializeMessage(line)
    } catch (error) {
      // A line that is not JSON-RPC (a server printing logs to stdout): reported, skipped.
      this.onerror?.(error as Error)
      return
    }
    if (!('method' in message) && 'id' in message && message.id !== undefined) this.outstanding.delete(message.id)
    this.onmessage?.(message)
  }

  /**
   * An answer over the cap was dropped: the request it answers fails now with a size error instead
   * of waiting for its timeout. The id is read from the line's start (`{"jsonrpc":"2.0","id":..`)
   * or end (`..,"id":7}`, where the SDK writes it); when neither names a request in flight, every
   * request in flight fails, since any of them may have been the one answered.
   */
  private oversized(dropped: { head: string; tail: string; bytes: number }): void {
    const limit = this.maxMessageBytes
    this.onerror?.(
      new Error(`the MCP server sent a message of ${dropped.bytes} bytes, over the ${limit}-byte cap; it was dropped`),
    )
    const id =
      idOf(dropped.head, /^\s*\{\s*(?:"jsonrpc"\s*:\s*"2\.0"\s*,\s*)?"id"\s*:\s*(-?\d+|"(?:[^"\\]|\\.)*")/) ??
      idOf(dropped.tail, /"id"\s*:\s*(-?\d+|"(?:[^"\\]|\\.)*")\s*\}\s*$/)
    const targets = id !== undefined && this.outstanding.has(id) ? [id] : [...this.outstanding]
    const data: TooLargeData = { reason: 'message-too-large', bytes: dropped.bytes, limit }
    for (const target of targets) {
      this.outstanding.delete(target)
      this.onmessage?.({
        jsonrpc: '2.0',
        id: target,
        error: {
          code: MESSAGE_TOO_LARGE,
          message: `the answer was ${dropped.bytes} bytes, over the ${limit}-byte message cap`,
          data,
        },
      })
    }
  }

  async close(): Promise<void> {
    const handle = this.handle
    if (!handle || this.exit) {
      this.finish()
      return
    }
    try {
      handle.closeStdin()
    } catch {
      // stdin already gone: the process is on its way out.
    }
    await handle.terminate()
    this.finish()
  }

  private finish(): void {
    if (this.closed) return
    this.closed = true
    this.pending = []
    this.pendingBytes = 0
    this.dropping = undefined
    this.outstanding.clear()
    this.onclose?.()
  }
}

/** The request id `pattern` finds in `text` (a JSON number or string), or undefined. */
function idOf(text: string, pattern: RegExp): string | number | undefined {
  const match = pattern.exec(text)
  if (!match) return undefined
  try {
    const value: unknown = JSON.parse(match[1])
    return typeof value === 'number' || typeof value === 'string' ? value : undefined
  } catch {
    return undefined
  }
}

function lastLine(text: string): string {
  const lines = text
    .split('\n')
    .map((line) => line.trim())
    .filter(Boolean)
  const last = lines.at(-1) ?? ''
  return last.length > 300 ? `${last.slice(0, 297)}...` : last
}
