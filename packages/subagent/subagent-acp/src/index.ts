// @dsh/subagent-acp: the `acp` subagent provider. Each child is a fresh Agent Client Protocol agent
// process (by default `dsh-acp`) driven with the official ACP SDK's client side over stdio: one
// session in the parent's cwd, one prompt, and the text the agent streamed after its last tool
// call as the answer. The process is stopped when the child ends.
import { spawn } from 'node:child_process'
import { Writable } from 'node:stream'
import type { Context } from 'cordis'
import Schema from 'schemastery'
// Loaded on first use: the SDK is not needed to boot (most runs never start an ACP child).
type AcpSdk = typeof import('@agentclientprotocol/sdk')
let sdk: Promise<AcpSdk> | undefined
const loadSdk = () => (sdk ??= import('@agentclientprotocol/sdk'))
import type { ChildOutcome, ProviderChild, ProviderStartRequest, SubagentProvider } from '@dsh/subagent'
import type {} from '@dsh/subagent'

export const name = 'subagent-acp'
export const inject = ['subagents']

export interface SubagentAcpConfig {
  /** Provider name under `ctx.subagents`. */
  provider: string
  /** argv of the agent: the executable, then its arguments. */
  command: string[]
  /** Extra environment for the child (over this process's). */
  env: Record<string, string>
  /** Grace between `session/cancel` (or the end of stdin) and SIGTERM, then SIGKILL. */
  stopGraceMs: number
}

export const Config: Schema<Partial<SubagentAcpConfig>, SubagentAcpConfig> = Schema.object({
  provider: Schema.string().default('acp').description('Name of the provider under ctx.subagents.'),
  command: Schema.array(Schema.string()).default(['dsh-acp']).description('The ACP agent to run: executable and arguments.'),
  env: Schema.dict(Schema.string()).default({}).description('Extra environment variables for the child.'),
  stopGraceMs: Schema.natural().default(2000).description('How long a stopping child may take before it is killed.'),
})

const STDERR_TAIL = 2000

const describe = (error: unknown) => (error instanceof Error ? error.message : String(error))

function outcomeOf(stopReason: string, text: string): ChildOutcome {
  if (stopReason === 'end_turn') return { status: 'completed', text }
  if (stopReason === 'cancelled') return { status: 'cancelled', text }
  return { status: 'failed', text, error: { code: `ACP_${stopReason.toUpperCase()}`, message: `the ACP agent stopped: ${stopReason}` } }
}

export function acpProvider(config: SubagentAcpConfig): SubagentProvider {
  const [file, ...args] = config.command
  return {
    name: config.provider,
    description: `an out-of-process ACP agent (${file ?? '?'}): its own runtime, session and tools; give it the whole task`,
    async start(request: ProviderStartRequest): Promise<ProviderChild> {
      if (!file) throw new Error('subagent-acp: config.command is empty')
      const acp = await loadSdk()
      const { parent, prompt } = request
      const child = spawn(file, args, { cwd: parent.cwd, env: { ...process.env, ...config.env }, stdio: ['pipe', 'pipe', 'pipe'] })
      let stderr = ''
      child.stderr.on('data', (d: Buffer) => {
        stderr = (stderr + d.toString('utf8')).slice(-STDERR_TAIL)
      })
      const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
        child.on('close', (code, signal) => resolve({ code, signal }))
      })
      const spawned = new Promise<void>((resolve, reject) => {
        child.once('spawn', () => resolve())
        child.once('error', reject)
      })
      await spawned
      child.on('error', () => {})
      child.stdin.on('error', () => {})
      const readable = new ReadableStream<Uint8Array>({
        start(controller) {
          child.stdout.on('data', (d: Buffer) => controller.enqueue(new Uint8Array(d)))
          child.stdout.on('end', () => {
            try {
              controller.close()
            } catch {
              // already closed
            }
          })
        },
      })
      const writable = Writable.toWeb(child.stdin) as WritableStream<Uint8Array>
      // The answer: text streamed after the agent's last tool call.
      let text = ''
      let acpSession: string | undefined
      const app = acp
        .client({ name: 'dsh-subagent-acp' })
        .onNotification('session/update', ({ params }) => {
          if (params.sessionId !== acpSession) return
          const update = params.update
          if (update.sessionUpdate === 'agent_message_chunk' && update.content.type === 'text') text += update.content.text
          else if (update.sessionUpdate === 'tool_call') text = ''
        })
        // No human sits behind a child: its approval requests are declined.
        .onRequest('session/request_permission', () => ({ outcome: { outcome: 'cancelled' as const } }))
      const conn = app.connect(acp.ndJsonStream(writable, readable))
      let stopping = false
      const kill = () => {
        if (child.exitCode !== null || child.signalCode !== null) return
        child.kill('SIGTERM')
        setTimeout(() => {
          if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL')
        }, config.stopGraceMs).unref()
      }
      const died = exited.then(({ code, signal }) => {
        const how = signal ? `was killed by ${signal}` : `exited with code ${code}`
        const tail = stderr.trim().split('\n').slice(-3).join(' | ')
        throw new Error(`the ACP agent ${how}${tail ? `: ${tail}` : ''}`)
      })
      died.catch(() => {})
      const call = <T>(promise: Promise<T>) => Promise.race([promise, died])
      try {
        await call(conn.agent.request('initialize', { protocolVersion: acp.PROTOCOL_VERSION, clientCapabilities: {}, clientInfo: { name: 'dsh-subagent', version: '0' } }))
        const created = await call(conn.agent.request('session/new', { cwd: parent.cwd, mcpServers: [] }))
        acpSession = created.sessionId
      } catch (error) {
        kill()
        conn.close()
        throw error
      }
      const sessionId = acpSession
      const result: Promise<ChildOutcome> = call(conn.agent.request('session/prompt', { sessionId, prompt: [{ type: 'text', text: prompt }] })).then(
        (response) => outcomeOf(response.stopReason, text),
        async (error): Promise<ChildOutcome> => {
          if (stopping) return { status: 'cancelled', text }
          // A closed connection usually means the process is going: prefer how it ended.
          const grace = new Promise<void>((resolve) => setTimeout(resolve, config.stopGraceMs).unref())
          const reason = await Promise.race([died.then(() => error, (exit: unknown) => exit), grace.then(() => error)])
          kill()
          return { status: 'failed', text, error: { code: 'CHILD_EXITED', message: describe(reason) } }
        },
      )
      return {
        sessionId,
        result,
        abort() {
          if (stopping) return
          stopping = true
          void conn.agent.notify('session/cancel', { sessionId }).catch(() => {})
          // An agent that does not honour the cancel is stopped after the grace.
          setTimeout(kill, config.stopGraceMs).unref()
        },
        async dispose() {
          stopping = true
          child.stdin.end()
          const timer = setTimeout(kill, config.stopGraceMs)
          timer.unref()
          await exited
          clearTimeout(timer)
          conn.close()
        },
      }
    },
  }
}

export function apply(ctx: Context, config: SubagentAcpConfig): void {
  ctx.subagents.registerProvider(acpProvider(config))
}
