// @dsh/subagent-codex: the `codex` subagent provider. Each child runs `codex app-server` in the
// parent's workspace and drives it over the app-server's JSON-RPC wire (JSONL on stdio, no
// "jsonrpc" member): initialize, initialized, thread/start, turn/start with the task; streamed
// agent-message items are collected and `turn/completed` ends the child. Approval requests from
// the server are declined (nobody can answer them inside a delegated run). Dormant until a `codex`
// executable is installed: a missing one is a START_FAILED refusal that names the command.
import type { Context } from 'cordis'
import Schema from 'schemastery'
import type { TokenUsage } from '@dsh/llm'
import {
  childEnv,
  startLineProcess,
  type ChildOutcome,
  type LineProcess,
  type ProviderChild,
  type ProviderStartRequest,
  type SubagentProvider,
} from '@dsh/subagent'
/** The parent's sandbox mode, as the seam hands it to a provider. */
type SandboxMode = ProviderStartRequest['inherit']['mode']
import type {} from '@dsh/subprocess'

export const name = 'subagent-codex'
export const inject = ['subagents', 'subprocess']

export interface SubagentCodexConfig {
  provider: string
  command: string
  /** Arguments that start the app-server on stdio. */
  args: string[]
  env: Record<string, string>
  /** Credentials the child gets; every other credential-looking variable is scrubbed. */
  credentials: string[]
  /** `model` of thread/start; empty: Codex's default. */
  model: string
  /** `approvalPolicy` of thread/start. */
  approvalPolicy: 'never' | 'on-request' | 'on-failure' | 'untrusted'
  /** `sandbox` of thread/start: the most the child gets; a stricter parent mode lowers it. */
  sandbox: 'read-only' | 'workspace-write' | 'danger-full-access'
  /** How long each request (initialize, thread/start, turn/start) may take. */
  requestTimeoutMs: number
  closeTimeoutMs: number
}

export const Config: Schema<Partial<SubagentCodexConfig>, SubagentCodexConfig> = Schema.object({
  provider: Schema.string().default('codex').description('Name of the provider under ctx.subagents.'),
  command: Schema.string().default('codex').description('The Codex executable (on PATH, or a path).'),
  args: Schema.array(Schema.string())
    .default(['app-server'])
    .description('Arguments that start the app-server on stdio.'),
  env: Schema.dict(Schema.string()).default({}).description('Extra environment variables for the child.'),
  credentials: Schema.array(Schema.string())
    .default(['OPENAI_API_KEY', 'CODEX_API_KEY'])
    .description('Credentials passed to the child; other credential-looking variables are scrubbed.'),
  model: Schema.string().default('').description('Model for the thread; empty: its default.'),
  approvalPolicy: Schema.union(['never', 'on-request', 'on-failure', 'untrusted'] as const)
    .default('never')
    .description('approvalPolicy of the thread (requests that still come are declined).'),
  sandbox: Schema.union(['read-only', 'workspace-write', 'danger-full-access'] as const)
    .default('workspace-write')
    .description('sandbox of the thread.'),
  requestTimeoutMs: Schema.natural()
    .min(1)
    .default(30_000)
    .description('How long initialize, thread/start and turn/start may take.'),
  closeTimeoutMs: Schema.natural()
    .default(2000)
    .description('How long a closing child may take before it is terminated.'),
}) as Schema<Partial<SubagentCodexConfig>, SubagentCodexConfig>

type Json = Record<string, any>

const STRICTNESS: readonly SandboxMode[] = ['read-only', 'workspace-write', 'danger-full-access']

/** Codex's `sandbox` for a child of a parent in `mode`: the configured one, never looser than the parent's. */
export function childSandbox(configured: SandboxMode, mode: SandboxMode): SandboxMode {
  return STRICTNESS[Math.min(STRICTNESS.indexOf(configured), STRICTNESS.indexOf(mode))]
}

/** Token usage of a `thread/tokenUsage/updated` notification (its running total). */
export function usageOf(params: Json | undefined): TokenUsage | undefined {
  const total = params?.tokenUsage?.total
  if (!total || typeof total !== 'object') return undefined
  const n = (v: unknown) => (typeof v === 'number' && Number.isFinite(v) ? v : 0)
  return {
    input: n(total.inputTokens),
    output: n(total.outputTokens),
    cacheRead: n(total.cachedInputTokens),
    cacheWrite: 0,
    reasoning: n(total.reasoningOutputTokens),
  }
}

/** A JSON-RPC peer over a line process: requests with ids and timeouts, notifications, server requests. */
class Peer {
  private nextId = 1
  private readonly pending = new Map<
    number,
    { resolve: (v: any) => void; reject: (e: Error) => void; timer: NodeJS.Timeout }
  >()
  proc!: LineProcess

  constructor(
    private readonly timeoutMs: number,
    private readonly onNotification: (method: string, params: Json) => void,
  ) {}

  receive(message: unknown): void {
    const m = message as Json
    if (!m || typeof m !== 'object') return
    if (typeof m.method === 'string' && m.id !== undefined) {
      // A request from the server: approvals are declined, anything else is not implemented.
      if (/requestApproval$/.test(m.method)) this.proc.send({ id: m.id, result: { decision: 'decline' } })
      else this.proc.send({ id: m.id, error: { code: -32601, message: `dsh does not implement ${m.method}` } })
      return
    }
    if (typeof m.method === 'string') {
      this.onNotification(m.method, (m.params ?? {}) as Json)
      return
    }
    const waiter = typeof m.id === 'number' ? this.pending.get(m.id) : undefined
    if (!waiter) return
    this.pending.delete(m.id)
    clearTimeout(waiter.timer)
    if (m.error) waiter.reject(new Error(`${String(m.error.message ?? 'error')} (code ${m.error.code})`))
    else waiter.resolve(m.result ?? {})
  }

  request(method: string, params: Json): Promise<Json> {
    const id = this.nextId++
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(id)
        reject(new Error(`${method} got no answer within ${Math.round(this.timeoutMs / 1000)} s`))
      }, this.timeoutMs)
      timer.unref()
      this.pending.set(id, { resolve, reject, timer })
      if (!this.proc.send({ method, id, params })) {
        clearTimeout(timer)
        this.pending.delete(id)
        reject(new Error(`${method}: the app-server's input is closed`))
      }
    })
  }

  notify(method: string, params?: Json): void {
    this.proc.send(params === undefined ? { method } : { method, params })
  }

  failAll(error: Error): void {
    for (const [id, waiter] of this.pending) {
      clearTimeout(waiter.timer)
      waiter.reject(error)
      this.pending.delete(id)
    }
  }
}

export function codexProvider(ctx: Context, config: SubagentCodexConfig, version = '0.1.0'): SubagentProvider {
  return {
    name: config.provider,
    description:
      'a Codex run (`codex app-server`) in this workspace with its own tools and model; give it the whole task',
    async start(request: ProviderStartRequest): Promise<ProviderChild> {
      const { parent, prompt } = request
      let settle!: (outcome: ChildOutcome) => void
      const result = new Promise<ChildOutcome>((resolve) => (settle = resolve))
      let settled = false
      const finish = (outcome: ChildOutcome) => {
        if (settled) return
        settled = true
        settle(outcome)
      }
      let threadId = ''
      let turnId = ''
      let aborted = false
      let usage: TokenUsage | undefined
      let lastText = ''
      const deltas = new Map<string, string>()
      const withUsage = () => (usage ? { usage } : {})
      const peer = new Peer(config.requestTimeoutMs, (method, params) => {
        if (params.threadId !== undefined && threadId && params.threadId !== threadId) return
        switch (method) {
          case 'item/agentMessage/delta': {
            const key = String(params.itemId ?? '')
            const text = (deltas.get(key) ?? '') + String(params.delta ?? '')
            deltas.set(key, text)
            lastText = text
            return
          }
          case 'item/completed':
            if (params.item?.type === 'agentMessage' && typeof params.item.text === 'string')
              lastText = params.item.text
            return
          case 'thread/tokenUsage/updated':
            usage = usageOf(params) ?? usage
            return
          case 'turn/completed': {
            const turn = (params.turn ?? {}) as Json
            if (turnId && turn.id !== undefined && turn.id !== turnId) return
            const status = String(turn.status ?? 'completed')
            if (status === 'completed') finish({ status: 'completed', text: lastText, ...withUsage() })
            else if (status === 'interrupted' || aborted)
              finish({ status: 'cancelled', text: lastText, ...withUsage() })
            else
              finish({
                status: 'failed',
                text: lastText,
                error: {
                  code: 'CODEX_TURN_FAILED',
                  message: String(turn.error?.message ?? `the Codex turn ended ${status}`),
                },
                ...withUsage(),
              })
            return
          }
          default:
            return
        }
      })
      try {
        peer.proc = await startLineProcess({
          subprocess: ctx.subprocess,
          command: config.command,
          args: config.args,
          cwd: parent.cwd,
          env: await childEnv(ctx, config.credentials, config.env, request.inherit),
          killGraceMs: config.closeTimeoutMs,
          onMessage: (message) => peer.receive(message),
        })
      } catch (error) {
        const code = (error as NodeJS.ErrnoException).code
        throw new Error(
          code === 'ENOENT'
            ? `"${config.command}" was not found (install Codex, or set the command in the ${config.provider} row)`
            : (error as Error).message,
        )
      }
      const proc = peer.proc
      void proc.exited.then(({ code, signal }) => {
        const why = proc.stderrTail()
        const error = new Error(`codex app-server exited (${signal ?? `code ${code}`})${why ? `: ${why}` : ''}`)
        peer.failAll(error)
        if (aborted) finish({ status: 'cancelled', text: lastText, ...withUsage() })
        finish({
          status: 'failed',
          text: lastText,
          error: { code: 'CHILD_EXITED', message: `${error.message} before the turn completed` },
          ...withUsage(),
        })
      })
      try {
        await peer.request('initialize', { clientInfo: { name: 'dsh', title: 'dsh subagent', version } })
        peer.notify('initialized')
        const thread = await peer.request('thread/start', {
          cwd: parent.cwd,
          approvalPolicy: config.approvalPolicy,
          sandbox: childSandbox(config.sandbox, request.inherit.mode),
          ...(config.model ? { model: config.model } : {}),
        })
        threadId = String(thread.thread?.id ?? '')
        if (!threadId) throw new Error('thread/start answered without a thread id')
        const turn = await peer.request('turn/start', { threadId, input: [{ type: 'text', text: prompt }] })
        turnId = String(turn.turn?.id ?? '')
      } catch (error) {
        await proc.close(config.closeTimeoutMs)
        throw error
      }
      return {
        sessionId: threadId,
        result,
        abort() {
          aborted = true
          if (!turnId) {
            proc.signal('SIGTERM')
            return
          }
          peer.request('turn/interrupt', { threadId, turnId }).catch(() => proc.signal('SIGTERM'))
        },
        async dispose() {
          await proc.close(config.closeTimeoutMs)
        },
      }
    },
  }
}

export function apply(ctx: Context, config: SubagentCodexConfig): void {
  ctx.subagents.registerProvider(codexProvider(ctx, config))
}
