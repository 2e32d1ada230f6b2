// An MCP stdio transport over the `ctx.subprocess` seam, so a local server runs in the mounted
// execution world (and its process group is terminated with the plugin) instead of being spawned
// behind the seam's back. Framing is the SDK's own: one JSON-RPC message per line.
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js'
import type { ReadBuffer } from '@modelcontextprotocol/sdk/shared/stdio.js'
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js'
import type { Sdk } from './sdk.ts'
import type { ProcessExit, ProcessHandle, SubprocessService } from '@dsh/subprocess'
import type { StdioServerSpec } from './config.ts'

const STDERR_KEEP = 4096

export class SubprocessStdioTransport implements Transport {
  onclose?: () => void
  onerror?: (error: Error) => void
  onmessage?: (message: JSONRPCMessage) => void

  private handle?: ProcessHandle
  private readonly buffer: ReadBuffer
  private stderrTail = ''
  private closed = false
  /** How the process ended, once it has. */
  exit?: ProcessExit

  constructor(
    private readonly sdk: Sdk,
    private readonly subprocess: SubprocessService,
    private readonly spec: StdioServerSpec,
    private readonly graceMs: number,
  ) {
    this.buffer = new sdk.ReadBuffer()
  }

  /** The last few KiB the server wrote to stderr (for failure messages). */
  get stderr(): string {
    return this.stderrTail
  }

  /** One line describing how the process ended, or undefined while it runs. */
  describeExit(): string | undefined {
    const exit = this.exit
    if (!exit) return undefined
    if (exit.spawnError) return `could not start ${JSON.stringify(this.spec.command)}: ${exit.spawnError.code} (${exit.spawnError.message})`
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
      try {
        this.buffer.append(Buffer.from(chunk.data))
      } catch (error) {
        // One message over the buffer cap (10 MiB): dropped and reported; later lines still parse.
        this.onerror?.(error as Error)
        return
      }
      for (;;) {
        let message: JSONRPCMessage | null
        try {
          message = this.buffer.readMessage()
        } catch (error) {
          // A line that is not JSON-RPC (a server printing logs to stdout): reported, skipped.
          this.onerror?.(error as Error)
          continue
        }
        if (message === null) break
        this.onmessage?.(message)
      }
    })
    void handle.exited.then((exit) => {
      this.exit = exit
      this.finish()
    })
  }

  async send(message: JSONRPCMessage): Promise<void> {
    if (this.closed || !this.handle) throw new Error(this.describeExit() ?? 'the server process is not running')
    this.handle.write(this.sdk.serializeMessage(message))
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
    this.buffer.clear()
    this.onclose?.()
  }
}

function lastLine(text: string): string {
  const lines = text.split('\n').map((line) => line.trim()).filter(Boolean)
  const last = lines.at(-1) ?? ''
  return last.length > 300 ? `${last.slice(0, 297)}...` : last
}
