// Direct tool calls of one MCP connection, logged in one dsh session (created at the first call).
// Each call is one turn in the loop's own shape, so the log derives a valid history, `dsh sessions`
// lists it and `dsh --resume` continues it with the calls in view:
//   turn/start -> user/message (plugin source: who called) -> step/start
//   -> assistant/message (the tool-call block) -> tool/call -> [pipeline] -> tool/result
//   -> step/end -> turn/end
// Calls of one connection run one at a time: a turn may not open while another is open.
import { randomUUID } from 'node:crypto'
import type { Context } from 'cordis'
import type { Session } from '@dsh/session'
import type { ToolResultPayload } from '@dsh/tools'
import type {} from '@dsh/session-persistence'

export const PLUGIN = '@dsh/mcp-server'

export interface CallLogOptions {
  cwd: string
  /** The MCP client's name and version, once it initialized (for the session's title and the log). */
  client: () => { name: string; version?: string } | undefined
}

export class CallLog {
  private session: Session | undefined
  private nextTurn = 0
  private tail: Promise<unknown> = Promise.resolve()

  constructor(
    private readonly ctx: Context,
    private readonly options: CallLogOptions,
  ) {}

  /** The session of this connection's direct calls, once one was made. */
  get sessionId(): string | undefined {
    return this.session?.id
  }

  /** Runs one call through the registry's pipeline, logged as a turn of this connection's session. */
  run(name: string, args: Record<string, unknown>, signal: AbortSignal): Promise<ToolResultPayload> {
    const next = this.tail.then(() => this.runOne(name, args, signal))
    this.tail = next.catch(() => {})
    return next
  }

  private open(): Session | undefined {
    if (this.session) return this.session
    const sessions = this.ctx.get('sessions')
    if (!sessions) return undefined
    const session = sessions.create({ cwd: this.options.cwd })
    const client = this.options.client()
    session.append('session/title', { title: `MCP calls from ${client?.name ?? 'a client'}`, source: PLUGIN })
    this.session = session
    return session
  }

  private async runOne(name: string, args: Record<string, unknown>, signal: AbortSignal): Promise<ToolResultPayload> {
    const session = this.open()
    const callId = `mcp_${randomUUID()}`
    const raw = JSON.stringify(args)
    if (!session) return this.ctx.tools.execute({ callId, name, arguments: raw }, { cwd: this.options.cwd, signal })
    const turn = this.nextTurn++
    const client = this.options.client()
    const who = client
      ? `The MCP client "${client.name}"${client.version ? ` ${client.version}` : ''}`
      : 'An MCP client'
    session.append('turn/start', { turn })
    session.append('user/message', {
      content: [{ type: 'text', text: `${who} ran the tool ${name} directly through dsh mcp serve.` }],
      source: { kind: 'plugin', plugin: PLUGIN, label: 'MCP tool call' },
    })
    session.append('step/start', { turn, step: 0 })
    session.append('assistant/message', {
      message: { role: 'assistant', content: [{ type: 'tool-call', callId, name, arguments: raw }] },
      finish: 'tool-calls',
    })
    session.append('tool/call', { callId, name, arguments: raw })
    let result: ToolResultPayload
    try {
      result = await this.ctx.tools.execute(
        { callId, name, arguments: raw },
        { cwd: this.options.cwd, signal, sessionId: session.id, turn, step: 0 },
      )
    } catch (error) {
      // execute() never rejects for tool failures; this is a broken pipeline listener.
      const message = `Error [INTERNAL_ERROR]: ${error instanceof Error ? error.message : String(error)}`
      result = {
        message: { role: 'tool', callId, name, content: [{ type: 'text', text: message }], isError: true },
        error: { code: 'INTERNAL_ERROR', message },
      }
    }
    session.append('tool/result', result)
    session.append('step/end', { turn, step: 0 })
    session.append('turn/end', { turn, reason: signal.aborted ? 'cancelled' : 'completed' })
    // Durable before the client reads the answer: another process may list or resume it next.
    await this.ctx
      .get('durableSessions')
      ?.checkpoint(session.id)
      .catch(() => {})
    return result
  }
}
