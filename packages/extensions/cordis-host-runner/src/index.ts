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

/** Where the browser half of a running definition is: asked of the pages, running in one, or failed there. */
export type BrowserState = 'waiting' | 'running' | 'failed'

export interface Definition {
  readonly name: DefinitionName
  readonly description: string
  readonly code: string
  /** The browser half's code (the body of `function (dsh) {...}` run in a sandboxed frame of a page), when there is one. */
  readonly browser?: string
  /** sha256 of the code (of `[code, browser]` as JSON with a browser half): what an approval covers. */
  readonly hash: string
  /** The session that defined it; retracted with that session. The name is unique within it. */
  readonly sessionId?: string
  readonly cwd: string
  state: DefinitionState
  /** Why the last run failed. */
  error?: string
  /** Handlers the running code registered. */
  handlers: string[]
  /** Lines the code printed with dsh.log (last `maxLogLines`); the browser half's start with `[browser]`. */
  log: string[]
  /** With a browser half, while running: whether a page runs it. */
  browserState?: BrowserState
  /** Why the browser half failed in a page. */
  browserError?: string
  /** Handlers the browser half registered (called through a page). */
  browserHandlers: string[]
}

/** What a page reports about the browser half it runs (validated by the page and again here). */
export type BrowserReport =
  | { kind: 'started' }
  | { kind: 'failed'; error: string }
  | { kind: 'log'; text: string }
  | { kind: 'handle'; handler: string }
  | { kind: 'result'; id: number; value?: unknown; error?: string }

export interface DefineInput {
  name: string
  description: string
  code: string
  browser?: string
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
  | 'INVALID_REPORT'

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
    /** A definition with a browser half started on the host: the open pages of its session are asked to run it. */
    'dynamicCordisRunner/request-run'(definition: Readonly<Definition>): void
    /** A page reported on a browser half (started, failed, logged, registered a handler). */
    'dynamicCordisRunner/browser'(definition: Readonly<Definition>): void
    /** A handler of a browser half is called: a page running it answers with a `result` report. */
    'dynamicCordisRunner/browser-invoke'(
      definition: Readonly<Definition>,
      call: { id: number; handler: string; input: unknown },
    ): void
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

/** The key of a definition: names are unique within a session, not across sessions. */
const keyOf = (sessionId: string | undefined, name: string) => `${sessionId ?? ''}\u0000${name}`

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
  /** Browser handler calls waiting for a page's answer, by call id. */
  private readonly browserCalls = new Map<
    number,
    { key: string; resolve: (r: { value?: unknown; error?: string }) => void }
  >()
  private nextBrowserCall = 0
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
        for (const key of [...this.live.keys()]) void this.stop(key, 'runner unloaded')
      },
      'dynamicCordisRunner: retract all',
    )
  }

  /** Every definition, or those of one session. */
  list(sessionId?: string): readonly Readonly<Definition>[] {
    return [...this.definitions.values()].filter((d) => sessionId === undefined || d.sessionId === sessionId)
  }

  /** The definition `name` of that session (of no session when `sessionId` is absent). */
  get(name: string, sessionId?: string): Readonly<Definition> | undefined {
    return this.definitions.get(keyOf(sessionId, name))
  }

  /** Adds or replaces a definition (not while it runs). Logged as `cordis/define` in its session. */
  define(input: DefineInput): Readonly<Definition> {
    if (!NAME.test(input.name))
      throw new RunnerError(
        'INVALID_NAME',
        `name ${JSON.stringify(input.name)} is not valid: use 1-40 lowercase letters, digits and "-", starting with a letter`,
      )
    const browser = input.browser?.trim() ? input.browser : undefined
    if (input.code.trim() === '' && !browser) throw new RunnerError('INVALID_CODE', 'code is empty')
    for (const [what, text] of [
      ['code', input.code],
      ['browser', browser ?? ''],
    ] as const) {
      const bytes = Buffer.byteLength(text, 'utf8')
      if (bytes > this.config.maxCodeBytes)
        throw new RunnerError(
          'INVALID_CODE',
          `${what} is ${bytes} bytes; at most ${this.config.maxCodeBytes} are allowed`,
        )
    }
    // The browser half is served inline in an HTML document: it cannot close its script element.
    if (browser && /<\/script|<!--/i.test(browser))
      throw new RunnerError('INVALID_CODE', 'browser code must not contain "</script" or "<!--"; split the string')
    const key = keyOf(input.sessionId, input.name)
    const existing = this.definitions.get(key)
    if (existing && this.live.has(key))
      throw new RunnerError('RUNNING', `${input.name} is running; retract it before defining it again`)
    if (!existing && this.definitions.size >= this.config.maxDefinitions)
      throw new RunnerError('TOO_MANY', `${this.config.maxDefinitions} definitions are held already; retract one first`)
    const definition: Definition = {
      name: input.name as DefinitionName,
      description: input.description,
      code: input.code,
      ...(browser ? { browser } : {}),
      hash: createHash('sha256')
        .update(browser ? JSON.stringify([input.code, browser]) : input.code)
        .digest('hex'),
      sessionId: input.sessionId,
      cwd: input.cwd,
      state: 'defined',
      handlers: [],
      log: [],
      browserHandlers: [],
    }
    this.definitions.set(key, definition)
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
   * (no one to ask) approvals refuse with NOT_APPROVED: nothing model-written runs unseen. The
   * definition is looked up in `origin.sessionId`'s definitions: a caller acts on its own session's.
   */
  async run(name: string, origin: CallOrigin = {}): Promise<Readonly<Definition>> {
    const key = keyOf(origin.sessionId, name)
    const definition = this.require(name, origin.sessionId)
    if (this.live.has(key)) throw new RunnerError('RUNNING', `${name} is running already`)
    const browserPart = definition.browser
      ? `\n\n// The browser half (runs in a sandboxed frame of the page, no network):\n${definition.browser}`
      : ''
    const outcome = await this.ctx.approval.request(
      {
        sessionId: definition.sessionId,
        agentId: origin.agentId,
        callId: origin.callId,
        kind: 'plugin',
        title: `Run the model-written plugin "${name}" inside dsh`,
        detail: `${definition.description}\n\n${definition.code}${browserPart}`,
        action: { plugin: name, sha256: definition.hash },
      },
      { signal: origin.signal },
    )
    if (outcome.decision !== 'allowed-once' && outcome.decision !== 'allowed-always') {
      const why = outcome.reason ? `: ${outcome.reason}` : ''
      throw new RunnerError('NOT_APPROVED', `running ${name} was not approved (${outcome.decision}${why})`)
    }
    if (this.live.has(key)) throw new RunnerError('RUNNING', `${name} is running already`)
    if (this.definitions.get(key) !== definition)
      throw new RunnerError('UNKNOWN_DEFINITION', `${name} changed while waiting for approval; run it again`)
    definition.handlers = []
    definition.browserHandlers = []
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
    this.live.set(key, { sandbox, fiber, disposeCode })
    try {
      await fiber
    } catch {
      // the failure is in `applied`
    }
    if (applied.error) {
      this.live.delete(key)
      await fiber.dispose()
      definition.state = 'failed'
      definition.error = applied.error
      this.sessionOf(definition)?.append('cordis/run', { name, hash: definition.hash, ok: false, error: applied.error })
      throw new RunnerError('APPLY_FAILED', `${name} failed while starting: ${applied.error}`)
    }
    definition.state = 'running'
    if (definition.browser) {
      definition.browserState = 'waiting'
      definition.browserError = undefined
    }
    this.sessionOf(definition)?.append('cordis/run', { name, hash: definition.hash, ok: true })
    this.ctx.emit('dynamicCordisRunner/mounted', definition)
    // The browser half runs in a page: the surfaces ask the open pages of the session (request-run).
    if (definition.browser) this.ctx.emit('dynamicCordisRunner/request-run', definition)
    return definition
  }

  /**
   * Calls a handler the running code registered with `dsh.handle` (the host half's first, then the
   * browser half's through a page); resolves with its JSON result. Scoped to `sessionId`'s definitions.
   */
  async invoke(name: string, handler: string, input: unknown, sessionId?: string): Promise<unknown> {
    const key = keyOf(sessionId, name)
    const definition = this.require(name, sessionId)
    const live = this.live.get(key)
    if (!live || definition.state !== 'running') throw new RunnerError('NOT_RUNNING', `${name} is not running`)
    const outcome =
      !definition.handlers.includes(handler) && definition.browserHandlers.includes(handler)
        ? await this.invokeBrowser(key, definition, handler, input)
        : await live.sandbox.invoke(handler, input, this.config.settleTimeoutMs)
    if (outcome.missing) {
      const all = [...definition.handlers, ...definition.browserHandlers.map((h) => `${h} (browser)`)]
      throw new RunnerError(
        'UNKNOWN_HANDLER',
        `${name} has no handler ${JSON.stringify(handler)} (it has: ${all.join(', ') || 'none'})`,
      )
    }
    if (outcome.error !== undefined)
      throw new RunnerError('HANDLER_FAILED', `${name}.${handler} failed: ${outcome.error}`)
    return outcome.value ?? null
  }

  private invokeBrowser(
    key: string,
    definition: Definition,
    handler: string,
    input: unknown,
  ): Promise<{ value?: unknown; error?: string; missing?: boolean }> {
    const id = ++this.nextBrowserCall
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.browserCalls.delete(id)
        resolve({
          error: `no page answered within ${this.config.settleTimeoutMs} ms (is the session open in dsh web?)`,
        })
      }, this.config.settleTimeoutMs)
      this.browserCalls.set(id, {
        key,
        resolve: (r) => {
          clearTimeout(timer)
          this.browserCalls.delete(id)
          resolve(r)
        },
      })
      this.ctx.emit('dynamicCordisRunner/browser-invoke', definition, { id, handler, input: input ?? null })
    })
  }

  /**
   * A page's report on the browser half of a running definition: it started, failed, logged a
   * line, registered a handler, or answered a call. Refused unless the definition runs with a
   * browser half and `hash` is the code the user approved.
   */
  browserReport(name: string, sessionId: string | undefined, hash: string, report: BrowserReport): void {
    const key = keyOf(sessionId, name)
    const definition = this.require(name, sessionId)
    if (!definition.browser || definition.state !== 'running' || !this.live.has(key))
      throw new RunnerError('NOT_RUNNING', `${name} has no running browser half`)
    if (hash !== definition.hash)
      throw new RunnerError('INVALID_REPORT', `the report is for other code than ${name} runs (hash ${hash})`)
    switch (report.kind) {
      case 'started':
        definition.browserState = 'running'
        definition.browserError = undefined
        break
      case 'failed':
        definition.browserState = 'failed'
        definition.browserError = String(report.error)
        break
      case 'log':
        definition.log.push(`[browser] ${String(report.text)}`)
        if (definition.log.length > this.config.maxLogLines) definition.log.shift()
        break
      case 'handle':
        if (!definition.browserHandlers.includes(report.handler)) definition.browserHandlers.push(report.handler)
        break
      case 'result': {
        const call = this.browserCalls.get(report.id)
        if (!call || call.key !== key) throw new RunnerError('INVALID_REPORT', `no call ${report.id} of ${name} waits`)
        call.resolve(report.error !== undefined ? { error: String(report.error) } : { value: report.value ?? null })
        return
      }
      default:
        throw new RunnerError(
          'INVALID_REPORT',
          `unknown report kind ${JSON.stringify((report as { kind: unknown }).kind)}`,
        )
    }
    this.ctx.emit('dynamicCordisRunner/browser', definition)
  }

  /** Takes a running definition down (when it runs) and forgets it. Scoped to `sessionId`'s definitions. */
  async retract(name: string, reason = 'retracted', sessionId?: string): Promise<void> {
    const definition = this.require(name, sessionId)
    const key = keyOf(definition.sessionId, name)
    await this.stop(key, reason, true)
    this.definitions.delete(key)
  }

  private async forgetSession(sessionId: string, reason: string): Promise<void> {
    for (const d of this.list(sessionId)) await this.retract(d.name, reason, sessionId)
  }

  private async stop(key: string, reason: string, forget = false): Promise<void> {
    const live = this.live.get(key)
    const definition = this.definitions.get(key)
    if (!live || !definition) return
    if (forget) this.definitions.delete(key)
    this.live.delete(key)
    for (const [id, call] of [...this.browserCalls])
      if (call.key === key) {
        this.browserCalls.delete(id)
        call.resolve({ error: `${definition.name} was taken down (${reason})` })
      }
    await live.fiber.dispose()
    await live.disposeCode()
    definition.state = 'defined'
    definition.handlers = []
    definition.browserHandlers = []
    definition.browserState = undefined
    this.sessionOf(definition)?.append('cordis/retract', { name: definition.name, reason })
    this.ctx.emit('dynamicCordisRunner/retract', definition, reason)
  }

  private require(name: string, sessionId?: string): Definition {
    const definition = this.definitions.get(keyOf(sessionId, name))
    if (!definition) {
      const known = [...this.definitions.values()].filter((d) => d.sessionId === sessionId).map((d) => d.name)
      const where = sessionId === undefined ? '' : ` in session ${sessionId}`
      throw new RunnerError(
        'UNKNOWN_DEFINITION',
        `no definition named ${JSON.stringify(name)}${where} (defined there: ${known.join(', ') || 'none'})`,
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
