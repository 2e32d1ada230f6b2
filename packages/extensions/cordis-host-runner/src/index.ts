// @dsh/cordis-host-runner: `ctx.dynamicCordisRunner`, the host half of model-written plugins.
// A definition (name, description, code) is held in process memory; running one asks the user
// (ctx.approval, fail closed), then mounts it as a Cordis fiber whose body is the code in a fresh
// node:vm context. The code reaches the host only through `dsh.handle`, `dsh.log`, `dsh.exec`
// (ctx.shell, so commands run confined by the session's mode) and `dsh.onDispose`. Handlers are
// called through `invoke`. A definition is retracted (its fiber disposed) by `retract`, when the
// last agent of its session goes away, and when this plugin unloads.
import { createHash } from 'node:crypto'
import { type Context, Service } from 'cordis'
import Schema from 'schemastery'
import type { Brand } from '@dsh/brand'
import type {} from '@dsh/user-approval'
import type {} from '@dsh/shell'
import type {} from '@dsh/session-persistence'
import type {} from '@dsh/agent'
import { Sandbox } from './sandbox.ts'

export type DefinitionName = Brand<string, 'DynamicDefinitionName'>

export type DefinitionState = 'defined' | 'running' | 'failed'

export interface Definition {
  readonly name: DefinitionName
  readonly description: string
  readonly code: string
  /** sha256 of the code: what an approval covers. */
  readonly hash: string
  /** The session that defined it; retracted with that session. */
  readonly sessionId?: string
  readonly cwd: string
  state: DefinitionState
  /** Why the last run failed. */
  error?: string
  /** Handlers the running code registered. */
  handlers: string[]
  /** Lines the code printed with dsh.log (last `maxLogLines`). */
  log: string[]
}

export interface DefineInput {
  name: string
  description: string
  code: string
  sessionId?: string
  cwd: string
}

export interface CallOrigin {
  sessionId?: string
  agentId?: string
  callId?: string
  signal?: AbortSignal
}

export type RunnerErrorCode =
  | 'INVALID_NAME'
  | 'INVALID_CODE'
  | 'UNKNOWN_DEFINITION'
  | 'RUNNING'
  | 'NOT_RUNNING'
  | 'NOT_APPROVED'
  | 'APPLY_FAILED'
  | 'UNKNOWN_HANDLER'
  | 'HANDLER_FAILED'
  | 'TOO_MANY'

export class RunnerError extends Error {
  constructor(
    readonly code: RunnerErrorCode,
    message: string,
  ) {
    super(message)
  }
}

export interface RunnerConfig {
  maxDefinitions: number
  maxCodeBytes: number
  syncTimeoutMs: number
  settleTimeoutMs: number
  maxLogLines: number
}

declare module 'cordis' {
  interface Context {
    dynamicCordisRunner: DynamicCordisRunner
  }
  interface Events {
    /** A definition was added or replaced. */
    'dynamicCordisRunner/defined'(definition: Readonly<Definition>): void
    /** A definition's code is running (its fiber is active). */
    'dynamicCordisRunner/mounted'(definition: Readonly<Definition>): void
    /** A running definition was taken down (retract, its session ended, or the runner unloaded). */
    'dynamicCordisRunner/retract'(definition: Readonly<Definition>, reason: string): void
  }
}

declare module '@dsh/session' {
  interface SessionEventMap {
    /** The model defined (or replaced) a dynamic plugin in this session: the code as it will run. */
    'cordis/define': { name: string; description: string; code: string; hash: string }
    /** A definition of this session started running (after approval) or failed to. */
    'cordis/run': { name: string; hash: string; ok: boolean; error?: string }
    /** A definition of this session was taken down. */
    'cordis/retract': { name: string; reason: string }
  }
}

export const SESSION_EVENTS = ['cordis/define', 'cordis/run', 'cordis/retract'] as const

const NAME = /^[a-z][a-z0-9-]{0,39}$/

interface Live {
  sandbox: Sandbox
  fiber: { dispose(): unknown }
  /** Runs the code's dsh.onDispose callbacks once; the same promise on every call. */
  disposeCode(): Promise<unknown>
}

export class DynamicCordisRunner extends Service {
  static readonly inject = ['approval', 'agents', 'sessions']

  static readonly Config: Schema<Partial<RunnerConfig>, RunnerConfig> = Schema.object({
    maxDefinitions: Schema.natural().min(1).default(20).description('Most definitions held at once.'),
    maxCodeBytes: Schema.natural().min(64).default(65536).description('Largest code of one definition (UTF-8 bytes).'),
    syncTimeoutMs: Schema.natural()
      .min(10)
      .default(1000)
      .description('Longest synchronous stretch of the code in one evaluation or call.'),
    settleTimeoutMs: Schema.natural()
      .min(10)
      .default(30000)
      .description('Longest wait for the code to settle an apply, a handler call or its disposers.'),
    maxLogLines: Schema.natural().min(1).default(50).description('dsh.log lines kept per definition.'),
  }) as Schema<Partial<RunnerConfig>, RunnerConfig>

  private readonly definitions = new Map<string, Definition>()
  private readonly live = new Map<string, Live>()
  private shell: Context['shell'] | undefined

  constructor(
    ctx: Context,
    readonly config: RunnerConfig,
  ) {
    super(ctx, 'dynamicCordisRunner')
    ctx.inject(['shell'], (inner) => {
      this.shell = inner.shell
      inner.effect(() => () => {
        this.shell = undefined
      })
    })
    ctx.inject(['sessionPersistence'], (inner) => {
      for (const type of SESSION_EVENTS) inner.effect(() => inner.sessionPersistence.registerEventType(type))
    })
    // Nothing outlives its session: when the last agent of a session goes, its definitions go.
    ctx.on('agent/disposed', (agent) => {
      const sessionId = agent.session.id
      const others = ctx.agents.list().some((a) => a !== agent && a.session.id === sessionId)
      if (!others) void this.forgetSession(sessionId, 'session ended')
    })
    ctx.on('session/deleted', (session) => void this.forgetSession(session.id, 'session deleted'))
    ctx.effect(
      () => () => {
        for (const name of [...this.live.keys()]) void this.stop(name, 'runner unloaded')
      },
      'dynamicCordisRunner: retract all',
    )
  }

  /** Every definition, or those of one session. */
  list(sessionId?: string): readonly Readonly<Definition>[] {
    return [...this.definitions.values()].filter((d) => sessionId === undefined || d.sessionId === sessionId)
  }

  get(name: string): Readonly<Definition> | undefined {
    return this.definitions.get(name)
  }

  /** Adds or replaces a definition (not while it runs). Logged as `cordis/define` in its session. */
  define(input: DefineInput): Readonly<Definition> {
    if (!NAME.test(input.name))
      throw new RunnerError(
        'INVALID_NAME',
        `name ${JSON.stringify(input.name)} is not valid: use 1-40 lowercase letters, digits and "-", starting with a letter`,
      )
    const bytes = Buffer.byteLength(input.code, 'utf8')
    if (input.code.trim() === '') throw new RunnerError('INVALID_CODE', 'code is empty')
    if (bytes > this.config.maxCodeBytes)
      throw new RunnerError('INVALID_CODE', `code is ${bytes} bytes; at most ${this.config.maxCodeBytes} are allowed`)
    const existing = this.definitions.get(input.name)
    if (existing && this.live.has(input.name))
      throw new RunnerError('RUNNING', `${input.name} is running; retract it before defining it again`)
    if (!existing && this.definitions.size >= this.config.maxDefinitions)
      throw new RunnerError('TOO_MANY', `${this.config.maxDefinitions} definitions are held already; retract one first`)
    const definition: Definition = {
      name: input.name as DefinitionName,
      description: input.description,
      code: input.code,
      hash: createHash('sha256').update(input.code).digest('hex'),
      sessionId: input.sessionId,
      cwd: input.cwd,
      state: 'defined',
      handlers: [],
      log: [],
    }
    this.definitions.set(input.name, definition)
    this.sessionOf(definition)?.append('cordis/define', {
      name: definition.name,
      description: definition.description,
      code: definition.code,
      hash: definition.hash,
    })
    this.ctx.emit('dynamicCordisRunner/defined', definition)
    return definition
  }

  /**
   * Asks the user, then mounts the definition's code as a fiber. Rejected, cancelled or unanswered
   * (no one to ask) approvals refuse with NOT_APPROVED: nothing model-written runs unseen.
   */
  async run(name: string, origin: CallOrigin = {}): Promise<Readonly<Definition>> {
    const definition = this.require(name)
    if (this.live.has(name)) throw new RunnerError('RUNNING', `${name} is running already`)
    const outcome = await this.ctx.approval.request(
      {
        sessionId: origin.sessionId ?? definition.sessionId,
        agentId: origin.agentId,
        callId: origin.callId,
        kind: 'plugin',
        title: `Run the model-written plugin "${name}" inside dsh`,
        detail: `${definition.description}\n\n${definition.code}`,
        action: { plugin: name, sha256: definition.hash },
      },
      { signal: origin.signal },
    )
    if (outcome.decision !== 'allowed-once' && outcome.decision !== 'allowed-always') {
      const why = outcome.reason ? `: ${outcome.reason}` : ''
      throw new RunnerError('NOT_APPROVED', `running ${name} was not approved (${outcome.decision}${why})`)
    }
    if (this.live.has(name)) throw new RunnerError('RUNNING', `${name} is running already`)
    if (this.definitions.get(name) !== definition)
      throw new RunnerError('UNKNOWN_DEFINITION', `${name} changed while waiting for approval; run it again`)
    definition.handlers = []
    definition.error = undefined
    const sandbox = new Sandbox(this.hostFor(definition), {
      filename: `dynamic:${name}`,
      timeoutMs: this.config.syncTimeoutMs,
    })
    let applied: { error?: string } = {}
    let disposing: Promise<unknown> | undefined
    const disposeCode = () => (disposing ??= sandbox.dispose(this.config.settleTimeoutMs))
    const fiber = this.ctx.plugin({
      name: `dynamic:${name}`,
      apply: async (inner: Context) => {
        applied = await sandbox.apply(definition.code, this.config.settleTimeoutMs)
        if (applied.error) throw new RunnerError('APPLY_FAILED', applied.error)
        inner.effect(() => () => void disposeCode(), `dynamic:${name}: dispose`)
      },
    })
    this.live.set(name, { sandbox, fiber, disposeCode })
    try {
      await fiber
    } catch {
      // the failure is in `applied`
    }
    if (applied.error) {
      this.live.delete(name)
      await fiber.dispose()
      definition.state = 'failed'
      definition.error = applied.error
      this.sessionOf(definition)?.append('cordis/run', { name, hash: definition.hash, ok: false, error: applied.error })
      throw new RunnerError('APPLY_FAILED', `${name} failed while starting: ${applied.error}`)
    }
    definition.state = 'running'
    this.sessionOf(definition)?.append('cordis/run', { name, hash: definition.hash, ok: true })
    this.ctx.emit('dynamicCordisRunner/mounted', definition)
    return definition
  }

  /** Calls a handler the running code registered with `dsh.handle`; resolves with its JSON result. */
  async invoke(name: string, handler: string, input: unknown): Promise<unknown> {
    const definition = this.require(name)
    const live = this.live.get(name)
    if (!live || definition.state !== 'running') throw new RunnerError('NOT_RUNNING', `${name} is not running`)
    const outcome = await live.sandbox.invoke(handler, input, this.config.settleTimeoutMs)
    if (outcome.missing)
      throw new RunnerError(
        'UNKNOWN_HANDLER',
        `${name} has no handler ${JSON.stringify(handler)} (it has: ${definition.handlers.join(', ') || 'none'})`,
      )
    if (outcome.error !== undefined)
      throw new RunnerError('HANDLER_FAILED', `${name}.${handler} failed: ${outcome.error}`)
    return outcome.value ?? null
  }

  /** Takes a running definition down (when it runs) and forgets it. */
  async retract(name: string, reason = 'retracted'): Promise<void> {
    this.require(name)
    await this.stop(name, reason, true)
    this.definitions.delete(name)
  }

  private async forgetSession(sessionId: string, reason: string): Promise<void> {
    for (const d of this.list(sessionId)) await this.retract(d.name, reason)
  }

  private async stop(name: string, reason: string, forget = false): Promise<void> {
    const live = this.live.get(name)
    const definition = this.definitions.get(name)
    if (!live || !definition) return
    if (forget) this.definitions.delete(name)
    this.live.delete(name)
    await live.fiber.dispose()
    await live.disposeCode()
    definition.state = 'defined'
    definition.handlers = []
    this.sessionOf(definition)?.append('cordis/retract', { name, reason })
    this.ctx.emit('dynamicCordisRunner/retract', definition, reason)
  }

  private require(name: string): Definition {
    const definition = this.definitions.get(name)
    if (!definition) {
      const known = [...this.definitions.keys()]
      throw new RunnerError(
        'UNKNOWN_DEFINITION',
        `no definition named ${JSON.stringify(name)} (defined: ${known.join(', ') || 'none'})`,
      )
    }
    return definition
  }

  private sessionOf(definition: Definition) {
    if (definition.sessionId === undefined) return undefined
    return this.ctx.sessions.get(definition.sessionId)
  }

  private hostFor(definition: Definition) {
    return {
      call: (op: string, payload: unknown) => {
        const p = payload as { name?: string; text?: string }
        if (op === 'handle') {
          if (!definition.handlers.includes(p.name!)) definition.handlers.push(p.name!)
          return {}
        }
        if (op === 'log') {
          definition.log.push(String(p.text))
          if (definition.log.length > this.config.maxLogLines) definition.log.shift()
          return {}
        }
        return { error: `unknown operation ${op}` }
      },
      callAsync: async (op: string, payload: unknown) => {
        if (op !== 'exec') throw new Error(`unknown operation ${op}`)
        const shell = this.shell
        if (!shell) throw new Error('dsh.exec: no shell is part of this dsh (the shell row is missing)')
        // Through the shell seam: the executor confines the command by the session's mode.
        const spec = await shell.resolve({ command: (payload as { command: string }).command, cwd: definition.cwd })
        const result = await shell.run(spec)
        return {
          exitCode: result.exitCode,
          status: result.status,
          output: result.output.truncated
            ? `${result.output.head}\n[... output cut ...]\n${result.output.tail}`
            : result.output.head,
        }
      },
    }
  }
}

export const name = '@dsh/cordis-host-runner'
export default DynamicCordisRunner
