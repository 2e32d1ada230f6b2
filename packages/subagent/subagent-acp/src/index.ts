// @dsh/subagent-acp: the `acp` subagent provider. Each child is a fresh Agent Client Protocol agent
// process (by default `dsh-acp`) driven with the official ACP SDK's client side over stdio: one
// session in the parent's cwd, one prompt, and the text the agent streamed after its last tool
// call as the answer. The process is stopped when the child ends. The child starts through
// `ctx.subprocess` (own process group, scrubbed environment plus the named credentials) and is
// confined like its parent: the parent session's sandbox mode, its patch layers and its
// delegation depth travel as `--patch` arguments and environment variables (see @dsh/subagent).
import type { Context } from 'cordis'
import Schema from 'schemastery'
// Loaded on first use: the SDK is not needed to boot (most runs never start an ACP child).
type AcpSdk = typeof import('@agentclientprotocol/sdk')
let sdk: Promise<AcpSdk> | undefined
const loadSdk = () => (sdk ??= import('@agentclientprotocol/sdk'))
import {
  childEnv,
  writePolicyLayer,
  type ChildOutcome,
  type ProviderChild,
  type ProviderStartRequest,
  type SubagentProvider,
} from '@dsh/subagent'
import type {} from '@dsh/subagent'
import type {} from '@dsh/subprocess'

export const name = 'subagent-acp'
export const inject = ['subagents', 'subprocess']

export interface SubagentAcpConfig {
  /** Provider name under `ctx.subagents`. */
  provider: string
  /** argv of the agent: the executable, then its arguments. */
  command: string[]
  /** Extra environment for the child (over the scrubbed inherited one). */
  env: Record<string, string>
  /** Credentials the child gets (read through ctx.credentials, else this process's environment); every other credential-looking variable is scrubbed. */
  credentials: string[]
  /**
   * The child is a dsh (`dsh-acp`): pass it the parent's patch layers and policy as `--patch`
   * arguments. `auto`: when an element of `command` is a `dsh-acp` file.
   */
  dsh: boolean | 'auto'
  /** Grace between `session/cancel` (or the end of stdin) and SIGTERM, then SIGKILL. */
  stopGraceMs: number
}

export const Config: Schema<Partial<SubagentAcpConfig>, SubagentAcpConfig> = Schema.object({
  provider: Schema.string().default('acp').description('Name of the provider under ctx.subagents.'),
  command: Schema.array(Schema.string())
    .default(['dsh-acp'])
    .description('The ACP agent to run: executable and arguments.'),
  env: Schema.dict(Schema.string()).default({}).description('Extra environment variables for the child.'),
  credentials: Schema.array(Schema.string())
    .default(['DEEPSEEK_API_KEY', 'OPENAI_API_KEY', 'ANTHROPIC_API_KEY', 'OPENROUTER_API_KEY', 'GEMINI_API_KEY'])
    .description('Credentials passed to the child; other credential-looking variables are scrubbed.'),
  dsh: Schema.union([Schema.const('auto'), Schema.boolean()])
    .default('auto')
    .description(
      "The child is dsh-acp: pass the parent's patch layers and policy (--patch); auto: when the command runs a dsh-acp file.",
    ),
  stopGraceMs: Schema.natural().default(2000).description('How long a stopping child may take before it is killed.'),
})

const STDERR_TAIL = 2000

const describe = (error: unknown) => (error instanceof Error ? error.message : String(error))

function outcomeOf(stopReason: string, text: string): ChildOutcome {
  if (stopReason === 'end_turn') return { status: 'completed', text }
  if (stopReason === 'cancelled') return { status: 'cancelled', text }
  return {
    status: 'failed',
    text,
    error: { code: `ACP_${stopReason.toUpperCase()}`, message: `the ACP agent stopped: ${stopReason}` },
  }
}

/** Does `command` run dsh-acp (`dsh-acp`, `/path/dsh-acp`, `node /path/dsh-acp.mjs`)? */
export function runsDshAcp(command: readonly string[]): boolean {
  return command.some((part) => /(^|[\\/])dsh-acp(\.[cm]?js)?$/.test(part))
}

export function acpProvider(ctx: Context, config: SubagentAcpConfig): SubagentProvider {
  const [file, ...args] = config.command
  const isDsh = config.dsh === 'auto' ? runsDshAcp(config.command) : config.dsh
  return {
    name: config.provider,
    description: `an out-of-process ACP agent (${file ?? '?'}): its own runtime, session and tools; give it the whole task`,
    async start(request: ProviderStartRequest): Promise<ProviderChild> {
      if (!file) throw new Error('subagent-acp: config.command is empty')
      const acp = await loadSdk()
      const { parent, prompt } = request
      // A dsh child composes its own base and reads the home patch itself; it gets the parent's
      // own --patch layers, and (through the environment) its mode, depth and limit.
      // Last, the parent's resolved sandbox policy (writable roots, network, protected paths).
      const env = await childEnv(ctx, config.credentials, config.env, request.inherit)
      const policyLayer = isDsh ? writePolicyLayer(request.inherit) : undefined
      const layerArgs = isDsh
        ? [...request.inherit.patchFiles, ...(policyLayer ? [policyLayer.file] : [])].flatMap((f) => ['--patch', f])
        : []
      const child = ctx.subprocess.spawn({
        file,
        args: [...args, ...layerArgs],
        cwd: parent.cwd,
        env,
        stdin: 'pipe',
        retentionMode: 'none',
        kill: { graceMs: config.stopGraceMs },
      })
      let stderr = ''
      const errText = new TextDecoder()
      let controller!: ReadableStreamDefaultController<Uint8Array>
      const readable = new ReadableStream<Uint8Array>({ start: (c) => void (controller = c) })
      child.onOutput((chunk) => {
        if (chunk.stream === 'stderr')
          stderr = (stderr + errText.decode(chunk.data, { stream: true })).slice(-STDERR_TAIL)
        else controller.enqueue(new Uint8Array(chunk.data))
      })
      let gone = false
      const exited = child.exited.then((exit) => {
        gone = true
        policyLayer?.remove()
        try {
          controller.close()
        } catch {
          // already closed
        }
        return { code: exit.code, signal: exit.signal, spawnError: exit.spawnError }
      })
      if (child.pid === undefined) {
        const { spawnError } = await exited
        throw new Error(
          `spawn ${file} ${spawnError?.code ?? 'SPAWN_FAILED'}${spawnError?.message ? ` (${spawnError.message})` : ''}`,
        )
      }
      let stdinOpen = true
      const writable = new WritableStream<Uint8Array>({
        write(data) {
          if (stdinOpen && !gone) child.write(data)
        },
        close() {
          endStdin()
        },
      })
      const endStdin = () => {
        if (!stdinOpen) return
        stdinOpen = false
        try {
          child.closeStdin()
        } catch {
          // the process is gone
        }
      }
      // The answer: text streamed after the agent's last tool call.
      let text = ''
      let acpSession: string | undefined
      const app = acp
        .client({ name: 'dsh-subagent-acp' })
        .onNotification('session/update', ({ params }) => {
          if (params.sessionId !== acpSession) return
          const update = params.update
          if (update.sessionUpdate === 'agent_message_chunk' && update.content.type === 'text')
            text += update.content.text
          else if (update.sessionUpdate === 'tool_call') text = ''
        })
        // No human sits behind a child: its approval requests are declined.
        .onRequest('session/request_permission', () => ({ outcome: { outcome: 'cancelled' as const } }))
      const conn = app.connect(acp.ndJsonStream(writable, readable))
      let stopping = false
      // TERM to the child's process group, the grace, then KILL (the subprocess seam escalates).
      const kill = () => {
        if (!gone) void child.terminate()
      }
      const died = exited.then(({ code, signal }) => {
        const how = signal ? `was killed by ${signal}` : `exited with code ${code}`
        const tail = stderr.trim().split('\n').slice(-3).join(' | ')
        throw new Error(`the ACP agent ${how}${tail ? `: ${tail}` : ''}`)
      })
      died.catch(() => {})
      const call = <T>(promise: Promise<T>) => Promise.race([promise, died])
      try {
        await call(
          conn.agent.request('initialize', {
            protocolVersion: acp.PROTOCOL_VERSION,
            clientCapabilities: {},
            clientInfo: { name: 'dsh-subagent', version: '0' },
          }),
        )
        const created = await call(conn.agent.request('session/new', { cwd: parent.cwd, mcpServers: [] }))
        acpSession = created.sessionId
      } catch (error) {
        kill()
        conn.close()
        throw error
      }
      const sessionId = acpSession
      const result: Promise<ChildOutcome> = call(
        conn.agent.request('session/prompt', { sessionId, prompt: [{ type: 'text', text: prompt }] }),
      ).then(
        (response) => outcomeOf(response.stopReason, text),
        async (error): Promise<ChildOutcome> => {
          if (stopping) return { status: 'cancelled', text }
          // A closed connection usually means the process is going: prefer how it ended.
          const grace = new Promise<void>((resolve) => setTimeout(resolve, config.stopGraceMs).unref())
          const reason = await Promise.race([
            died.then(
              () => error,
              (exit: unknown) => exit,
            ),
            grace.then(() => error),
          ])
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
          endStdin()
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
  ctx.subagents.registerProvider(acpProvider(ctx, config))
}
