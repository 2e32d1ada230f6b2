// @dsh/e2b: the one owner of this run's E2B sandbox (`ctx.e2b`). The filesystem and subprocess
// providers of the e2b world await its single SDK handle, so files and processes live in the same
// remote machine. The sandbox is created on first use (not at boot: a run that never touches the
// world never bills one), its id is logged in the live sessions, and every sandbox this run
// created is killed when the plugin unloads.
import type { Context } from 'cordis'
import { Service } from 'cordis'
import Schema from 'schemastery'
import { AuthenticationError, RateLimitError, Sandbox, SandboxError, SandboxNotFoundError, type SandboxOpts } from 'e2b'
import { AsyncLocalStorage } from 'node:async_hooks'
import { existsSync, statSync } from 'node:fs'
import { randomBytes } from 'node:crypto'
import { packUpload, planUpload, UploadTooLarge } from './upload.ts'
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import type {} from '@dsh/home-paths'
import type {} from '@dsh/credentials'
import type { Session } from '@dsh/session'
import type { SubagentLink, SubagentWorldLease } from '@dsh/subagent'
import type {} from '@dsh/session-persistence'
import { runSafeGit, type SubprocessService } from '@dsh/subprocess'

export const CREDENTIAL = 'E2B_API_KEY'

/**
 * dsh's own files inside the sandbox (upload archive, baseline repository, mirrored startup
 * files): in the sandbox user's home, a path of the remote machine, never of this one.
 */
export const REMOTE_STATE_DIR = '/home/user/.dsh-e2b'

export interface E2bConfig {
  /** Template (or alias) new sandboxes start from. */
  template: string
  /** Sandbox lifetime in ms; each use past half of it extends it again. */
  timeoutMs: number
  /** Metadata attached to every sandbox this run creates (the run adds `dsh: "1"`). */
  metadata: Record<string, string>
  /** E2B domain (default: the SDK's, `E2B_DOMAIN` or e2b.app). */
  domain?: string
  /** Control-plane URL (default: the SDK's, `E2B_API_URL` or derived from the domain). */
  apiUrl?: string
  /** Sandbox (envd) URL (default: the SDK's, `E2B_SANDBOX_URL` or per-sandbox hosts). */
  sandboxUrl?: string
  /** Timeout of one control-plane or envd request. */
  requestTimeoutMs: number
  /** Remote working directory; default: the same absolute path as the local working directory. */
  cwd?: string
  /** Retries of a control-plane call (create, connect, kill, pause) answered 429 or a 5xx (each waits twice as long). */
  retries: number
  /** First retry delay in ms. */
  retryDelayMs: number
  /** What ends with the run: `kill` every sandbox it created, `pause` them, or `keep` them running. */
  onExit: 'kill' | 'pause' | 'keep'
  /** When a sandbox is found gone (killed, expired): `recreate` one on next use, or `stop` (every later use fails). */
  onLost: 'recreate' | 'stop'
  /** Reconnect to this sandbox id instead of creating one (it is then not killed at the end). */
  sandboxId?: string
  /** The local working tree copied into a new sandbox's working directory before first use. */
  upload: {
    enabled: boolean
    /** Local directory uploaded (default: the process working directory). */
    from?: string
    /** Refuse (before any sandbox is created) a tree larger than this, in bytes of file content. */
    maxBytes: number
    /** More gitignore-style patterns to leave out (`.git` and credential files always are). */
    exclude: string[]
  }
  /** At the end, the change a created sandbox made to its working directory, saved as a patch. */
  patch: {
    enabled: boolean
    /** Directory of saved patches (default: `$DSH_HOME/e2b-patches`). */
    dir?: string
  }
}

export interface SandboxLogEvent {
  sandboxId: string
  template: string
  action: 'created' | 'connected' | 'lost' | 'killed' | 'paused' | 'patched'
  reason?: string
  /** What the workspace upload brought (on `created`). */
  uploaded?: { files: number; bytes: number }
  /** Where the end-of-run patch was saved (on `patched`). */
  patch?: string
}

declare module 'cordis' {
  interface Context {
    e2b: E2bService
  }
}

declare module '@dsh/session' {
  interface SessionEventMap {
    /** The e2b world's sandbox lifecycle, so a log shows which machine ran the session's commands. */
    'e2b/sandbox': SandboxLogEvent
  }
}

/** What `finish()` reports: one line per sandbox change for the user, and whether an apply failed. */
export interface FinishReport {
  /** Sentences for stderr (no `dsh: ` prefix, no newline). */
  lines: string[]
  /** True when `apply` was asked and a patch did not apply (nothing of it was applied). */
  failed: boolean
  /** Each saved patch: the paths it touches and the local tree it applies to. */
  patches: Array<{ sandboxId: string; file: string; files: string[]; dir: string; applied?: boolean }>
  /** True when the app's stop interrupted a sandbox's preparation (its line is in `lines`). */
  interrupted: boolean
}

/** A failure of the e2b world, with a one-line message the model and the user can act on. */
export class E2bError extends Error {
  override name = 'E2bError'
  constructor(
    readonly code:
      | 'MISSING_KEY'
      | 'AUTH'
      | 'RATE_LIMIT'
      | 'UNAVAILABLE'
      | 'SANDBOX_LOST'
      | 'STOPPED'
      | 'UPLOAD_TOO_LARGE'
      | 'UPLOAD_FAILED'
      | 'INTERRUPTED',
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options)
  }
}

/**
 * One place commands run: the run's own sandbox (`root`), or a subagent child's (a lease opened
 * through the subagent world "e2b"). Mutated in place (see `state`).
 */
interface Slot {
  /** `root`, or the child's `parentSessionId/id`. */
  key: string
  /** The child's link, for a child's slot. */
  link?: SubagentLink
  current?: Promise<Sandbox>
  sandboxId?: string
  lastExtend: number
  /** `onLost: stop` after this slot's sandbox was lost. */
  stopped?: E2bError
  /** The root slot looked for a continued session's sandbox already (once per run). */
  resumeChecked?: boolean
}

const sleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve) => {
    // Not unref'd: at the end of a one-shot run this wait may be all that keeps the process alive.
    const timer = setTimeout(done, ms)
    signal?.addEventListener('abort', done, { once: true })
    function done() {
      clearTimeout(timer)
      signal?.removeEventListener('abort', done)
      resolve()
    }
  })

/** A control-plane answer worth retrying: 429 (rate limit) or a 5xx. */
function isTransient(error: unknown): boolean {
  return error instanceof RateLimitError || (error instanceof SandboxError && /^5\d\d:/.test(error.message))
}

const interrupted = (when: string) => new E2bError('INTERRUPTED', `the app is stopping: interrupted ${when}`)

export class E2bService extends Service {
  static Config: Schema<Partial<E2bConfig>, E2bConfig> = Schema.object({
    template: Schema.string().default('base').description('Template or alias new sandboxes start from.'),
    timeoutMs: Schema.natural()
      .min(1000)
      .default(600_000)
      .description('Sandbox lifetime in ms, extended while the run uses it.'),
    metadata: Schema.dict(String).default({}).description('Metadata attached to each sandbox this run creates.'),
    domain: Schema.string().description('E2B domain (default: E2B_DOMAIN, else e2b.app).'),
    apiUrl: Schema.string().description('Control-plane URL (default: E2B_API_URL, else derived from the domain).'),
    sandboxUrl: Schema.string().description('envd URL (default: E2B_SANDBOX_URL, else per-sandbox hosts).'),
    requestTimeoutMs: Schema.natural().min(100).default(30_000).description('Timeout of one request to E2B.'),
    cwd: Schema.string().description('Remote working directory (default: the local working directory path).'),
    retries: Schema.natural()
      .max(10)
      .default(2)
      .description('Retries of a control-plane call (create, connect, kill, pause) answered 429 or 5xx.'),
    retryDelayMs: Schema.natural().default(500).description('First retry delay in ms (doubles each retry).'),
    onExit: Schema.union(['kill', 'pause', 'keep'])
      .default('kill')
      .description('What happens to the sandboxes this run created when it ends.'),
    onLost: Schema.union(['recreate', 'stop'])
      .default('recreate')
      .description('After a sandbox is found gone: create a new one on next use, or stop.'),
    sandboxId: Schema.string().description('Reconnect to this sandbox instead of creating one.'),
    upload: Schema.object({
      enabled: Schema.boolean()
        .default(true)
        .description('Copy the local working tree (per .gitignore) into a new sandbox.'),
      from: Schema.string().description('Local directory uploaded (default: the process working directory).'),
      maxBytes: Schema.natural()
        .default(100 << 20)
        .description('Largest tree uploaded, in bytes of file content.'),
      exclude: Schema.array(String).default([]).description('More gitignore-style patterns to leave out.'),
    }).default({ enabled: true, maxBytes: 100 << 20, exclude: [] } as E2bConfig['upload'] as never),
    patch: Schema.object({
      enabled: Schema.boolean()
        .default(true)
        .description('Save the change a created sandbox made as a patch at the end of the run.'),
      dir: Schema.string().description('Directory of saved patches (default: $DSH_HOME/e2b-patches).'),
    }).default({ enabled: true } as E2bConfig['patch'] as never),
  })

  readonly config: E2bConfig
  /** Absolute remote working directory. */
  readonly cwd: string
  /**
   * Mutable state lives in one object mutated in place: Cordis may call methods on a per-caller
   * shadow of the service, where assigning a field would not reach the original.
   */
  private readonly state: {
    current?: Promise<Sandbox>
    /** A failure that retrying cannot fix (no key, a refused key, `onLost: stop`): every later use rethrows it. */
    fatal?: E2bError
    sandboxId?: string
    lastExtend: number
    /** Optional services, present while their providers are loaded (reached through nested injects). */
    credentials?: Context['credentials']
    sessions?: Context['sessions']
    /** Where end-of-run patches go by default (`$DSH_HOME/e2b-patches`), once known. */
    patchDir?: string
    /**
     * This machine's process seam, for `git apply` of a patch into the local tree. In the e2b world
     * `ctx.subprocess` is the sandbox, so the bundle loads a local provider under an isolated
     * `subprocess` name that only this row sees; a remote provider is never taken for it.
     */
    host?: SubprocessService
    /**
     * Aborted when the app starts stopping (Ctrl-C, SIGTERM, the end of the run): a sandbox still
     * being prepared (upload, baseline) stops there and is killed, and retry waits end.
     */
    stopping: AbortController
    /** Sandboxes being created or prepared right now (settled before the app unwinds). */
    opening: Set<Promise<unknown>>
    /** Lines for the user not yet reported by `finish()` (an interrupted preparation, a sandbox left running). */
    notices: string[]
    /** The app's stop interrupted a sandbox's preparation (said in `notices`). */
    interrupted: boolean
  } = { lastExtend: 0, stopping: new AbortController(), opening: new Set(), notices: [], interrupted: false }
  private readonly created = new Map<string, Sandbox>()
  /** Every open slot by sandbox id, so `lost` finds the one a sandbox belongs to. */
  private readonly slotOf = new Map<string, Slot>()
  /** The run's own sandbox (a child's calls run inside `scope` with the child's slot instead). */
  private readonly root: Slot = { key: 'root', lastExtend: 0 }
  private readonly scope = new AsyncLocalStorage<Slot>()
  /** Sandboxes whose starting tree was recorded (only those can produce a patch). */
  private readonly baselined = new Set<string>()
  private readonly home: Context

  constructor(ctx: Context, config: Partial<E2bConfig> = {}) {
    super(ctx, 'e2b')
    this.home = ctx
    this.config = E2bService.Config(config)
    this.cwd = this.config.cwd ?? process.cwd()
    if (!this.cwd.startsWith('/'))
      throw new TypeError(`e2b: cwd must be an absolute path, got ${JSON.stringify(this.cwd)}`)
    ctx.inject(['credentials'], (inner) => {
      this.state.credentials = inner.credentials
      return () => void (this.state.credentials = undefined)
    })
    ctx.inject(['sessions'], (inner) => {
      this.state.sessions = inner.sessions
      return () => void (this.state.sessions = undefined)
    })
    ctx.inject(['subprocess'], (inner) => {
      const found = inner.subprocess
      if ('world' in found && found.world === 'e2b') return
      this.state.host = found
      return () => void (this.state.host = undefined)
    })
    // Kept after homePaths unloads: the patch is saved while the tree is being disposed.
    ctx.inject(['homePaths'], (inner) => void (this.state.patchDir ??= join(inner.homePaths.home, 'e2b-patches')))
    ctx.inject(
      ['sessionPersistence'],
      (inner) => void inner.sessionPersistence.registerEventType('e2b/sandbox', { ignorable: true }),
    )
    // A subagent child may run in a sandbox of its own (`world: "e2b"` on the subagent tool).
    ctx.inject(['subagents'], (inner) =>
      inner.subagents.registerWorld({
        name: 'e2b',
        description: 'its own E2B sandbox, with a fresh copy of the workspace',
        open: (link) => this.lease(link),
      }),
    )
    // Ctrl-C during an upload: the preparation stops and the half-prepared sandbox is killed now,
    // while the sessions still take events, before the rows unwind.
    ctx.on('app/stopping', async () => {
      this.state.stopping.abort()
      await Promise.all([...this.state.opening].map((p) => p.catch(() => {})))
    })
    ctx.effect(() => () => this.release(), 'e2b: end the sandboxes this run created')
  }

  /** The id of the live sandbox of the calling scope (the run's, or a child's), once one exists. */
  get sandboxId(): string | undefined {
    return this.slot().sandboxId
  }

  private slot(): Slot {
    return this.scope.getStore() ?? this.root
  }

  /**
   * The sandbox of the calling scope: the run's (shared by every caller), or, inside a subagent
   * child's lease, the child's own. Created (or reconnected) on first use.
   */
  sandbox(): Promise<Sandbox> {
    if (this.state.fatal) return Promise.reject(this.state.fatal)
    const slot = this.slot()
    if (slot.stopped) return Promise.reject(slot.stopped)
    if (!slot.current) {
      const attempt = this.open(slot)
      slot.current = attempt
      this.state.opening.add(attempt)
      attempt.then(
        () => this.state.opening.delete(attempt),
        () => {
          this.state.opening.delete(attempt)
          if (slot.current === attempt) slot.current = undefined
        },
      )
    }
    const current = slot.current
    return current.then((sandbox) => {
      this.keepAlive(slot, sandbox)
      return sandbox
    })
  }

  /** A subagent child's own sandbox: every call inside `run` uses it; `close` saves its patch and ends it. */
  lease(link: SubagentLink): SubagentWorldLease {
    const slot: Slot = { key: `${link.parentSessionId}/${link.id}`, link, lastExtend: 0 }
    return {
      run: (fn) => this.scope.run(slot, fn),
      close: async () => {
        const pending = slot.current
        slot.current = undefined
        const sandbox = await pending?.catch(() => undefined)
        if (!sandbox || !this.created.has(sandbox.sandboxId)) return
        this.created.delete(sandbox.sandboxId)
        this.slotOf.delete(sandbox.sandboxId)
        const file = await this.end(sandbox, slot)
        if (file)
          process.stderr.write(
            `dsh: the E2B sandbox ${sandbox.sandboxId} of subagent ${link.id} changed the workspace; patch saved to ${file} (review it, then apply it with: ${await this.applyCommand(file, this.localTree())})\n`,
          )
      },
    }
  }

  /**
   * Reports that `sandbox` is gone (a command or file call found it killed or expired). The next
   * `sandbox()` creates a fresh one (`onLost: recreate`) or fails (`stop`). Returns the sentence
   * for the caller's result.
   */
  lost(sandbox: Sandbox, cause?: unknown): string {
    const id = sandbox.sandboxId
    const reason = cause instanceof Error ? cause.message.split('\n')[0] : undefined
    const slot = this.slotOf.get(id)
    if (slot && slot.sandboxId === id) {
      slot.current = undefined
      slot.sandboxId = undefined
      this.created.delete(id)
      this.slotOf.delete(id)
      this.log(slot, { sandboxId: id, template: this.config.template, action: 'lost', ...(reason ? { reason } : {}) })
      if (this.config.onLost === 'stop') {
        slot.stopped = new E2bError(
          'STOPPED',
          `the E2B sandbox ${id} is gone (killed or expired) and onLost is "stop": no further remote commands run in this session`,
        )
      }
    }
    return this.config.onLost === 'stop'
      ? `the E2B sandbox ${id} stopped (killed or expired) while this ran; the e2b world is stopped for this run`
      : `the E2B sandbox ${id} stopped (killed or expired) while this ran; the next command starts a new sandbox (files written there so far are lost)`
  }

  /** True when `error` says the sandbox is no longer running (as opposed to a failed call). */
  isGone(error: unknown): boolean {
    if (error instanceof SandboxNotFoundError) return true
    const message = error instanceof Error ? error.message : String(error)
    return (
      /not running anymore|sandbox .*(was )?not found|sandbox is probably not running|\bunavailable\b|502/i.test(
        message,
      ) && error instanceof SandboxError
    )
  }

  /** SDK options shared by every call (key, URLs, request timeout). */
  async connectionOptions(): Promise<SandboxOpts> {
    const apiKey = await this.apiKey()
    return {
      apiKey,
      requestTimeoutMs: this.config.requestTimeoutMs,
      ...(this.config.domain ? { domain: this.config.domain } : {}),
      ...(this.config.apiUrl ? { apiUrl: this.config.apiUrl } : {}),
      ...(this.config.sandboxUrl ? { sandboxUrl: this.config.sandboxUrl } : {}),
    }
  }

  private async apiKey(): Promise<string> {
    let key: string | undefined
    const credentials = this.state.credentials
    if (credentials) {
      try {
        key = await credentials.get(CREDENTIAL)
      } catch (error) {
        throw (this.state.fatal = new E2bError(
          'MISSING_KEY',
          `${CREDENTIAL} could not be read: ${(error as Error).message}`,
          { cause: error },
        ))
      }
    } else key = process.env[CREDENTIAL]
    if (!key) {
      let where = `export ${CREDENTIAL}=... in the environment`
      try {
        const description = await credentials?.describe(CREDENTIAL)
        if (description)
          where = description.layers
            .map((layer) => (layer.id === 'env' ? `export ${CREDENTIAL}=... in the environment` : layer.label))
            .join('; ')
      } catch {
        // the plain hint stands
      }
      throw (this.state.fatal = new E2bError(
        'MISSING_KEY',
        `the e2b world needs ${CREDENTIAL} (an E2B API key); set it in one of: ${where}`,
      ))
    }
    return key
  }

  private localTree(): string {
    return this.config.upload.from ?? process.cwd()
  }

  private async open(slot: Slot): Promise<Sandbox> {
    const options = await this.connectionOptions()
    // The root slot reconnects to `sandboxId` from config, or to the sandbox a continued session
    // ran in (when its run left it paused or running); a child always gets a new one.
    const configured = slot === this.root ? this.config.sandboxId : undefined
    const resumed = !configured && slot === this.root ? await this.resume(options) : undefined
    if (resumed) return resumed
    const reconnect = configured
    // The tree is measured before a sandbox exists: an oversized workspace bills nothing.
    const local = this.localTree()
    const upload = !reconnect && this.config.upload.enabled && isDirectory(local) ? this.plan(local) : undefined
    const signal = this.state.stopping.signal
    if (signal.aborted) throw interrupted('before an E2B sandbox was created')
    const sandbox = await this.withRetries(reconnect ? 'connect to' : 'create', () =>
      reconnect
        ? Sandbox.connect(reconnect, { ...options, timeoutMs: this.config.timeoutMs })
        : Sandbox.create(this.config.template, {
            ...options,
            timeoutMs: this.config.timeoutMs,
            metadata: { ...this.config.metadata, dsh: '1', ...(slot.link ? { 'dsh-subagent': slot.link.id } : {}) },
          }),
    )
    if (!reconnect) this.created.set(sandbox.sandboxId, sandbox)
    this.adopt(slot, sandbox)
    let phase = 'preparing the E2B sandbox'
    try {
      // Created while the app was being stopped: the create itself is never aborted (an aborted
      // create could leave a sandbox whose id we never learn), so its sandbox is ended here.
      signal.throwIfAborted()
      // The working directory mirrors the local path, which a fresh template does not have.
      await sandbox.commands.run(`mkdir -p ${quote(this.cwd)} && chown user ${quote(this.cwd)} 2>/dev/null; true`, {
        user: 'root',
        requestTimeoutMs: this.config.requestTimeoutMs,
        signal,
      })
      if (upload && upload.files.length > 0) {
        phase = 'uploading the workspace'
        await this.send(sandbox, local, upload, signal)
        phase = 'preparing the E2B sandbox'
      }
      if (!reconnect && this.config.patch.enabled) {
        // Without git in the template there is no patch at the end; the world still works.
        await this.baseline(sandbox, signal).then(
          () => this.baselined.add(sandbox.sandboxId),
          (error: unknown) =>
            this.home
              .logger('e2b')
              .warn(
                'sandbox %s: no baseline for the end-of-run patch: %s',
                sandbox.sandboxId,
                (error as Error).message,
              ),
        )
      }
      signal.throwIfAborted()
    } catch (error) {
      if (signal.aborted && !reconnect) throw await this.abandon(slot, sandbox, phase, error)
      throw error instanceof E2bError ? error : this.explain(error, 'prepare the working directory of')
    }
    this.log(slot, {
      sandboxId: sandbox.sandboxId,
      template: this.config.template,
      action: reconnect ? 'connected' : 'created',
      ...(upload ? { uploaded: { files: upload.files.length, bytes: upload.bytes } } : {}),
    })
    this.home.logger('e2b').info('sandbox %s %s', sandbox.sandboxId, reconnect ? 'connected' : 'created')
    return sandbox
  }

  /**
   * A sandbox whose preparation the app's stop interrupted (Ctrl-C during the upload): nothing of
   * it is kept. It is forgotten by the run (no patch, no end-of-run kill), killed now, logged as
   * killed, and one line tells the user (naming the id when the kill failed, so it can be ended
   * by hand; `finish()` reports it). Answers the error the waiting callers get.
   */
  private async abandon(slot: Slot, sandbox: Sandbox, phase: string, cause: unknown): Promise<E2bError> {
    const id = sandbox.sandboxId
    this.created.delete(id)
    this.slotOf.delete(id)
    if (slot.sandboxId === id) slot.sandboxId = undefined
    this.state.interrupted = true
    const killed = await this.retrying(() => sandbox.kill()).then(
      () => undefined,
      (error: unknown) => (error instanceof Error ? error.message : String(error)).split('\n')[0],
    )
    const reason = `interrupted while ${phase}`
    if (killed === undefined) {
      this.log(slot, { sandboxId: id, template: this.config.template, action: 'killed', reason })
      this.state.notices.push(`${reason}; the E2B sandbox ${id} created for it was killed`)
    } else
      this.state.notices.push(
        `${reason}; the E2B sandbox ${id} created for it could not be killed (${killed}); kill it yourself (e2b sandbox kill ${id}) or it runs until its timeout`,
      )
    return new E2bError(
      'INTERRUPTED',
      `${reason}; the E2B sandbox ${id} was ${killed === undefined ? 'killed' : 'left running'}`,
      {
        cause,
      },
    )
  }

  private adopt(slot: Slot, sandbox: Sandbox): void {
    slot.sandboxId = sandbox.sandboxId
    slot.lastExtend = Date.now()
    this.slotOf.set(sandbox.sandboxId, slot)
  }

  /**
   * `--continue`: the sandbox the continued session last ran in (its log's newest `e2b/sandbox`,
   * unless that says it was killed or lost), reconnected through the SDK (a paused one resumes).
   * It is then this run's own: ended per `onExit`, its next patch taken from where the last one
   * stopped. When it is gone, that is said once (stderr and a `lost` event) and undefined
   * answered, so a new sandbox is created.
   */
  private async resume(options: SandboxOpts): Promise<Sandbox | undefined> {
    if (this.root.resumeChecked) return undefined
    this.root.resumeChecked = true
    const last = this.rootSessions()
      .map((session) => session.last('e2b/sandbox')?.data)
      .find((event) => event !== undefined)
    if (!last || last.action === 'killed' || last.action === 'lost') return undefined
    const id = last.sandboxId
    let sandbox: Sandbox
    try {
      sandbox = await this.withRetries('connect to', () =>
        Sandbox.connect(id, { ...options, timeoutMs: this.config.timeoutMs }),
      )
    } catch (error) {
      if (error instanceof E2bError && (error.code === 'AUTH' || error.code === 'MISSING_KEY')) throw error
      const cause = error instanceof E2bError ? error.cause : error
      if (!(cause instanceof SandboxNotFoundError)) {
        // Not known to be gone (E2B kept answering 429/5xx, or could not be reached): it may still
        // exist, paused or running, so it is neither replaced (a second machine) nor forgotten (a
        // leak). This run's remote calls fail at once with the same sentence (no retry storm).
        const why = `${firstLine(cause instanceof Error ? cause.message : String(cause))}${this.tries(cause)}`
        const line = `could not reconnect to the session's E2B sandbox ${id} (${why}); it was left as it was: continue the session again later, or end it with: e2b sandbox kill ${id}`
        this.state.notices.push(line)
        throw (this.state.fatal = new E2bError(
          isTransient(cause) && cause instanceof RateLimitError ? 'RATE_LIMIT' : 'UNAVAILABLE',
          line,
          { cause },
        ))
      }
      const reason = (error instanceof Error ? error.message : String(error)).split('\n')[0]
      this.log(this.root, {
        sandboxId: id,
        template: this.config.template,
        action: 'lost',
        reason: `gone before this run: ${reason}`,
      })
      process.stderr.write(
        `dsh: the session's E2B sandbox ${id} is gone (killed or expired); starting a new one (its files are lost; saved patches stay)\n`,
      )
      return undefined
    }
    this.created.set(sandbox.sandboxId, sandbox)
    this.adopt(this.root, sandbox)
    if (this.config.patch.enabled) {
      const probe = await sandbox.commands
        .run(`test -d ${REMOTE_STATE_DIR}/baseline.git && echo yes || echo no`, {
          user: 'root',
          requestTimeoutMs: this.config.requestTimeoutMs,
        })
        .catch(() => undefined)
      if (probe?.stdout.trim() === 'yes') this.baselined.add(sandbox.sandboxId)
    }
    this.log(this.root, { sandboxId: sandbox.sandboxId, template: this.config.template, action: 'connected' })
    this.home.logger('e2b').info('sandbox %s reconnected for a continued session', sandbox.sandboxId)
    return sandbox
  }

  /** Live sessions that are not subagent children (whose first event is their `subagent/link`). */
  private rootSessions(): Session[] {
    return (this.state.sessions?.list() ?? []).filter((session) => session.events[0]?.type !== 'subagent/link')
  }

  private plan(local: string): ReturnType<typeof planUpload> {
    try {
      return planUpload(local, { maxBytes: this.config.upload.maxBytes, exclude: this.config.upload.exclude })
    } catch (error) {
      // The tree does not shrink by itself: later uses fail at once with the same sentence.
      if (error instanceof UploadTooLarge)
        throw (this.state.fatal = new E2bError('UPLOAD_TOO_LARGE', error.message, { cause: error }))
      throw new E2bError('UPLOAD_FAILED', `the workspace could not be read for upload: ${(error as Error).message}`, {
        cause: error,
      })
    }
  }

  /** Packs the planned files, uploads one archive and unpacks it into the remote working directory. */
  private async send(
    sandbox: Sandbox,
    local: string,
    plan: ReturnType<typeof planUpload>,
    signal: AbortSignal,
  ): Promise<void> {
    const archive = `${REMOTE_STATE_DIR}/workspace-${randomBytes(6).toString('hex')}.tgz`
    try {
      const bytes = await packUpload(local, plan, signal)
      await sandbox.files.write(archive, bytes.slice().buffer as ArrayBuffer, {
        requestTimeoutMs: Math.max(this.config.requestTimeoutMs, 120_000),
        signal,
      })
      await sandbox.commands.run(
        `tar -xzf ${archive} -C ${quote(this.cwd)} && rm -f ${archive} && chown -R user ${quote(this.cwd)} 2>/dev/null; true`,
        { user: 'root', requestTimeoutMs: this.config.requestTimeoutMs, signal },
      )
    } catch (error) {
      if (signal.aborted) throw error
      throw new E2bError(
        'UPLOAD_FAILED',
        `the workspace could not be uploaded to the E2B sandbox ${sandbox.sandboxId}: ${(error as Error).message.split('\n')[0]}`,
        { cause: error },
      )
    }
  }

  /** A private git repository (outside the tree) recording the working directory as it started. */
  private async baseline(sandbox: Sandbox, signal?: AbortSignal): Promise<void> {
    await sandbox.commands.run(
      `${this.git()} init -q && ${this.git()} add -A && ${this.git()} -c user.name=dsh -c user.email=dsh@localhost commit -q --allow-empty -m baseline`,
      { user: 'root', requestTimeoutMs: this.config.requestTimeoutMs, ...(signal ? { signal } : {}) },
    )
  }

  private async advanceBaseline(sandbox: Sandbox): Promise<void> {
    await sandbox.commands.run(
      `${this.git()} add -A && ${this.git()} -c user.name=dsh -c user.email=dsh@localhost commit -q --allow-empty -m patched`,
      { user: 'root', requestTimeoutMs: this.config.requestTimeoutMs },
    )
  }

  private git(): string {
    return `git --git-dir=${REMOTE_STATE_DIR}/baseline.git --work-tree=${quote(this.cwd)}`
  }

  /**
   * The change the sandbox made to its working directory since the baseline, as a binary git
   * patch saved locally; nothing is applied. Returns the file, or undefined when nothing changed.
   */
  async savePatch(sandbox: Sandbox): Promise<string | undefined> {
    const result = await sandbox.commands.run(`${this.git()} add -A && ${this.git()} diff --cached --binary HEAD`, {
      user: 'root',
      requestTimeoutMs: this.config.requestTimeoutMs,
    })
    if (result.stdout.trim() === '') return undefined
    const dir = this.config.patch.dir ?? this.state.patchDir
    if (!dir) return undefined
    mkdirSync(dir, { recursive: true, mode: 0o700 })
    const file = join(dir, `${sandbox.sandboxId}.patch`)
    writeFileSync(file, result.stdout, { mode: 0o600 })
    return file
  }

  private async withRetries(what: string, call: () => Promise<Sandbox>): Promise<Sandbox> {
    try {
      return await this.retrying(call, this.state.stopping.signal)
    } catch (error) {
      const explained = this.explain(error, what)
      if (explained.code === 'AUTH') throw (this.state.fatal = explained)
      throw explained
    }
  }

  /**
   * One control-plane call, retried `retries` times (doubling waits from `retryDelayMs`) while it
   * fails with a 429 or a 5xx; any other failure, or the last one, is thrown as the SDK gave it.
   * An aborted `signal` (the app stopping) ends the waiting.
   */
  private async retrying<T>(call: () => Promise<T>, signal?: AbortSignal): Promise<T> {
    for (let attempt = 0; ; attempt++) {
      try {
        return await call()
      } catch (error) {
        if (!isTransient(error) || attempt >= this.config.retries || signal?.aborted) throw error
        await sleep(this.config.retryDelayMs * 2 ** attempt, signal)
      }
    }
  }

  /** `N tries` for the lines that report a call that kept failing. */
  private tries(error: unknown): string {
    return isTransient(error) ? `, ${this.config.retries + 1} tries` : ''
  }

  /** One sentence for an SDK failure. */
  explain(error: unknown, what: string): E2bError {
    if (error instanceof E2bError) return error
    const first = (error instanceof Error ? error.message : String(error)).split('\n')[0]
    if (error instanceof AuthenticationError)
      return new E2bError('AUTH', `E2B refused ${CREDENTIAL} (${first}); check the key`, { cause: error })
    if (error instanceof RateLimitError)
      return new E2bError('RATE_LIMIT', `E2B is rate limiting: could not ${what} a sandbox (${first})`, {
        cause: error,
      })
    return new E2bError('UNAVAILABLE', `could not ${what} an E2B sandbox: ${first}`, { cause: error })
  }

  private keepAlive(slot: Slot, sandbox: Sandbox): void {
    // A long session keeps its machine: past half the lifetime, the next use extends it.
    if (Date.now() - slot.lastExtend < this.config.timeoutMs / 2) return
    slot.lastExtend = Date.now()
    void sandbox.setTimeout(this.config.timeoutMs).catch(() => {})
  }

  /** Appends to the sessions a slot serves: the child's own for a child's, else every root session. */
  private log(slot: Slot, event: SandboxLogEvent): void {
    const link = slot.link
    const sessions = link
      ? (this.state.sessions?.list() ?? []).filter((session) => {
          const first = session.events[0]
          return (
            first?.type === 'subagent/link' &&
            first.data.id === link.id &&
            first.data.parentSessionId === link.parentSessionId
          )
        })
      : this.rootSessions()
    for (const session of sessions) {
      try {
        session.append('e2b/sandbox', event)
      } catch {
        // a closed session takes no more events
      }
    }
  }

  /**
   * Ends the run's sandboxes now (the end of a one-shot run, before the app stops): each one's
   * change is saved as a patch, then the sandbox is killed (or paused, or kept, per `onExit`).
   * With `apply`, each saved patch is then applied to the local working tree through this
   * machine's process seam (`git apply`, checked first: a patch that does not apply changes
   * nothing and stays saved). Without it, the lines name the exact command that applies it.
   */
  async finish(options: { apply?: boolean } = {}): Promise<FinishReport> {
    // A sandbox still being created or prepared is settled first: an interrupted one kills itself
    // (its line is reported here), and a finished one is ended below like the others.
    await Promise.all([...this.state.opening].map((p) => p.catch(() => {})))
    const interrupted = this.state.interrupted
    this.state.interrupted = false
    const sandboxes = [...this.created.values()]
    this.created.clear()
    this.root.current = undefined
    const saved = await Promise.all(
      sandboxes.map((sandbox) => this.end(sandbox, this.slotOf.get(sandbox.sandboxId) ?? this.root)),
    )
    this.slotOf.clear()
    // What the user must know first: an interrupted setup, a sandbox that could not be ended or
    // reconnected (a child's included, ended before).
    const report: FinishReport = { lines: this.state.notices.splice(0), failed: false, patches: [], interrupted }
    const local = this.localTree()
    for (const [i, file] of saved.entries()) {
      if (!file) continue
      const id = sandboxes[i].sandboxId
      if (!options.apply) {
        report.patches.push({ sandboxId: id, file, files: patchFiles(readFileSafe(file)), dir: local })
        report.lines.push(
          `the E2B sandbox ${id} changed the workspace; patch saved to ${file} (review it, then apply it with: ${await this.applyCommand(file, local)})`,
        )
        continue
      }
      const applied = await this.applyPatch(file, local)
      report.patches.push({
        sandboxId: id,
        file,
        files: patchFiles(readFileSafe(file)),
        dir: local,
        applied: applied.ok,
      })
      report.lines.push(applied.line)
      if (!applied.ok) report.failed = true
    }
    return report
  }

  /** Saves the sandbox's change (when it has a baseline) and ends it per `onExit`; answers the patch file. */
  private async end(sandbox: Sandbox, slot: Slot): Promise<string | undefined> {
    let file: string | undefined
    if (this.config.patch.enabled && this.baselined.has(sandbox.sandboxId)) {
      try {
        file = await this.savePatch(sandbox)
        if (file)
          this.log(slot, {
            sandboxId: sandbox.sandboxId,
            template: this.config.template,
            action: 'patched',
            patch: file,
          })
        // A sandbox that outlives the run (paused or kept, for --continue) starts its next patch here.
        if (file && this.config.onExit !== 'kill') await this.advanceBaseline(sandbox)
      } catch (error) {
        this.home
          .logger('e2b')
          .warn('sandbox %s: the patch could not be saved: %s', sandbox.sandboxId, (error as Error).message)
      }
    }
    if (this.config.onExit === 'keep') return file
    try {
      if (this.config.onExit === 'pause') await this.retrying(() => sandbox.pause())
      else await this.retrying(() => sandbox.kill())
      this.log(slot, {
        sandboxId: sandbox.sandboxId,
        template: this.config.template,
        action: this.config.onExit === 'pause' ? 'paused' : 'killed',
      })
      this.home
        .logger('e2b')
        .info('sandbox %s %s', sandbox.sandboxId, this.config.onExit === 'pause' ? 'paused' : 'killed')
    } catch (error) {
      // Never silent: a sandbox left running bills until its timeout, so the user gets its id.
      const why = `${firstLine(error instanceof Error ? error.message : String(error))}${this.tries(error)}`
      const until = `${Math.round(this.config.timeoutMs / 1000)} s after its last use`
      this.state.notices.push(
        this.config.onExit === 'pause'
          ? `the E2B sandbox ${sandbox.sandboxId} could not be paused (${why}); it runs until its timeout (${until}) and is then killed, so its files are lost; to end it now: e2b sandbox kill ${sandbox.sandboxId}`
          : `the E2B sandbox ${sandbox.sandboxId} could not be killed (${why}); it runs until its timeout (${until}); to end it now: e2b sandbox kill ${sandbox.sandboxId}`,
      )
      this.home.logger('e2b').warn('sandbox %s could not be ended: %s', sandbox.sandboxId, why)
    }
    return file
  }

  /**
   * Applies a patch `finish()` saved to the local tree (`upload.from`, else the working directory),
   * checked first like `--apply`: for a surface that asks the user after the run (the TUI's panel).
   */
  applySaved(file: string): Promise<{ ok: boolean; line: string }> {
    return this.applyPatch(file, this.localTree())
  }

  /** `git apply --check`, then `git apply`, of a saved patch in the local tree `dir`. */
  private async applyPatch(file: string, dir: string): Promise<{ ok: boolean; line: string }> {
    const host = this.state.host
    const files = patchFiles(readFileSafe(file))
    const named = files.length > 0 ? files.join(', ') : 'no files'
    const keep = `nothing was changed; the patch stays at ${file} to retry`
    if (!host)
      return {
        ok: false,
        line: `the patch ${file} was not applied: no local process seam to run git with (the world-e2b bundle loads one); ${keep}`,
      }
    const prefix = await this.repoPrefix(host, dir)
    const args = [...(prefix ? [`--directory=${prefix}`] : []), file]
    const check = await runSafeGit(host, ['apply', '--check', ...args], { cwd: dir })
    if (check.code !== 0) {
      const failing = [...check.stderr.matchAll(/error: (?:patch failed: |)([^:\n]+?)(?::\d+)?(?:: .*)?$/gm)]
        .map((m) => m[1].trim())
        .filter((name, i, all) => name && all.indexOf(name) === i)
      const which = failing.length > 0 ? failing.join(', ') : named
      return {
        ok: false,
        line: `the patch ${file} no longer applies to ${dir} (${which}: ${firstLine(check.stderr) || 'git apply --check failed'}); ${keep}`,
      }
    }
    const applied = await runSafeGit(host, ['apply', ...args], { cwd: dir })
    if (applied.code !== 0)
      return {
        ok: false,
        line: `the patch ${file} could not be applied to ${dir} (${firstLine(applied.stderr) || `git exited ${applied.code}`}); the patch stays at ${file}`,
      }
    return { ok: true, line: `applied the patch ${file} to ${dir} (${named})` }
  }

  /** The exact command that applies `file` to `dir` (what `--apply` would run). */
  private async applyCommand(file: string, dir: string): Promise<string> {
    const prefix = this.state.host ? await this.repoPrefix(this.state.host, dir) : ''
    return `git -C ${quote(dir)} apply${prefix ? ` --directory=${quote(prefix)}` : ''} ${quote(file)}`
  }

  /** `dir`'s path inside its git work tree ('' at the top, or outside any repository). */
  private async repoPrefix(host: SubprocessService, dir: string): Promise<string> {
    const result = await runSafeGit(host, ['rev-parse', '--show-prefix'], { cwd: dir })
    return result.code === 0 ? result.stdout.trim().replace(/\/$/, '') : ''
  }

  /** At unload: ends what this run still holds (per `onExit`); a reconnected sandbox is left as it was. */
  private async release(): Promise<void> {
    const report = await this.finish()
    // The user's tree changes only with consent: the patch is saved and named, never applied here.
    for (const line of report.lines) process.stderr.write(`dsh: ${line}\n`)
  }
}

/** The paths a git patch touches (`diff --git a/X b/Y` headers, the new name). */
export function patchFiles(patch: string): string[] {
  const names = new Set<string>()
  for (const match of patch.matchAll(/^diff --git a\/(.+?) b\/(.+)$/gm)) names.add(match[2])
  return [...names]
}

function readFileSafe(file: string): string {
  try {
    return readFileSync(file, 'utf8')
  } catch {
    return ''
  }
}

const firstLine = (text: string) => text.trim().split('\n')[0] ?? ''

function isDirectory(path: string): boolean {
  try {
    return existsSync(path) && statSync(path).isDirectory()
  } catch {
    return false
  }
}

/** POSIX single-quoting for one shell word. */
export function quote(word: string): string {
  return /^[A-Za-z0-9_@%+=:,./-]+$/.test(word) ? word : `'${word.replace(/'/g, `'"'"'`)}'`
}

export { planUpload, packUpload, UploadTooLarge, ALWAYS_EXCLUDED } from './upload.ts'
export { Sandbox, CommandExitError, FileNotFoundError, NotFoundError, InvalidArgumentError } from 'e2b'
export const name = 'e2b'
export default E2bService
