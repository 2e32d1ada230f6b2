// @dsh/e2b: the one owner of this run's E2B sandbox (`ctx.e2b`). The filesystem and subprocess
// providers of the e2b world await its single SDK handle, so files and processes live in the same
// remote machine. The sandbox is created on first use (not at boot: a run that never touches the
// world never bills one), its id is logged in the live sessions, and every sandbox this run
// created is killed when the plugin unloads.
import type { Context } from 'cordis'
import { Service } from 'cordis'
import type Schema from 'schemastery'
import { Sandbox, SandboxNotFoundError, RateLimitError, type SandboxOpts } from 'e2b'
import { AsyncLocalStorage } from 'node:async_hooks'
import { join } from 'node:path'
import type {} from '@dsh/home-paths'
import type {} from '@dsh/credentials'
import type {} from '@dsh/session'
import type { SubagentLink, SubagentWorldLease } from '@dsh/subagent'
import type { SubprocessService } from '@dsh/subprocess'
import type {} from '@dsh/session-persistence'
import type {} from '@dsh/api-gateway'
import { ApiError } from '@dsh/web-protocol'
import { e2bApply, e2bKeep, e2bReview, type E2bReview, type E2bSettled } from './contract.ts'
import { explain, isGone, logEvent, readApiKey, retrying, rootSessions, tries } from './calls.ts'
import { E2bConfigSchema } from './config.ts'
import { applyCommand, applyPatch } from './local-patch.ts'
import * as remote from './remote.ts'
import {
  E2bError,
  REMOTE_STATE_DIR,
  type E2bConfig,
  type FinishReport,
  type IdleClock,
  type SandboxLogEvent,
  type Slot,
} from './types.ts'
import { firstLine, interrupted, isDirectory, isTransient, patchFiles, quote, readFileSafe } from './util.ts'

export {
  CREDENTIAL,
  E2bError,
  REMOTE_STATE_DIR,
  type E2bConfig,
  type FinishReport,
  type IdleClock,
  type SandboxLogEvent,
} from './types.ts'
export { patchFiles, quote } from './util.ts'

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

export class E2bService extends Service {
  static Config: Schema<Partial<E2bConfig>, E2bConfig> = E2bConfigSchema

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
    /** The change offered for approval and not settled yet (the web's review); a new review replaces it. */
    review?: { file: string; sandbox: Sandbox; tree: string }
    /** The idle timer's clock (`useClock`). */
    clock: IdleClock
  } = {
    clock: {
      setTimeout: (fire, ms) => {
        // unref'd: an idle timer never keeps a finished run alive.
        const timer = setTimeout(() => void fire(), ms)
        timer.unref?.()
        return timer
      },
      clearTimeout: (timer) => clearTimeout(timer as ReturnType<typeof setTimeout>),
    },
    lastExtend: 0,
    stopping: new AbortController(),
    opening: new Set(),
    notices: [],
    interrupted: false,
  }
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
    // The web host's approval of the sandbox's change (`e2b.review`, `e2b.apply`, `e2b.keep`).
    ctx.inject(['api'], (inner) => {
      inner.api.register(e2bReview, async () => ({ review: (await this.review()) ?? null }))
      inner.api.register(e2bApply, (p) => this.settle(p.file, 'apply'))
      inner.api.register(e2bKeep, (p) => this.settle(p.file, 'keep'))
    })
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
      this.touch(slot)
      return sandbox
    })
  }

  /**
   * Marks the calling scope's sandbox busy (a remote command runs there) until the answered
   * function is called: an idle pause or kill never lands under a running command.
   */
  busy(): () => void {
    const slot = this.slot()
    slot.busy = (slot.busy ?? 0) + 1
    this.disarm(slot)
    let done = false
    return () => {
      if (done) return
      done = true
      slot.busy = (slot.busy ?? 1) - 1
      this.touch(slot)
    }
  }

  /** Replaces the idle timer's clock (tests drive it by hand instead of waiting). */
  useClock(clock: IdleClock): void {
    this.state.clock = clock
  }

  private disarm(slot: Slot): void {
    if (slot.idleTimer === undefined) return
    this.state.clock.clearTimeout(slot.idleTimer)
    slot.idleTimer = undefined
  }

  /** The last use of a slot's sandbox: the idle timer starts again from now. */
  private touch(slot: Slot): void {
    this.disarm(slot)
    if (this.config.idle.afterMs <= 0 || (slot.busy ?? 0) > 0 || !slot.current) return
    slot.idleTimer = this.state.clock.setTimeout(() => this.idleOut(slot), this.config.idle.afterMs)
  }

  /**
   * A slot's sandbox stayed unused for `idle.afterMs`: paused (the next use resumes it through the
   * SDK's connect, files kept) or killed after its change is saved (the next use starts a new one).
   */
  private async idleOut(slot: Slot): Promise<void> {
    slot.idleTimer = undefined
    const pending = slot.current
    if (!pending || (slot.busy ?? 0) > 0) return
    const sandbox = await pending.catch(() => undefined)
    // A use came in meanwhile, or the sandbox never opened: nothing is idle.
    if (!sandbox || slot.current !== pending || (slot.busy ?? 0) > 0 || slot.idleTimer !== undefined) return
    const id = sandbox.sandboxId
    const seconds = Math.round(this.config.idle.afterMs / 1000)
    slot.current = undefined
    if (this.config.idle.action === 'pause') {
      try {
        await retrying(() => sandbox.pause(), this.config)
      } catch (error) {
        // Still running: it stays this slot's sandbox, and the timer starts again.
        slot.current = pending
        this.home.logger('e2b').warn('sandbox %s: the idle pause failed: %s', id, (error as Error).message)
        this.touch(slot)
        return
      }
      slot.paused = id
      this.log(slot, {
        sandboxId: id,
        template: this.config.template,
        action: 'paused',
        reason: `idle for ${seconds} s`,
      })
      this.home.logger('e2b').info('sandbox %s paused after %d s idle', id, seconds)
      return
    }
    this.created.delete(id)
    this.slotOf.delete(id)
    slot.sandboxId = undefined
    const file = await this.end(sandbox, slot, 'kill', `idle for ${seconds} s`)
    this.state.notices.push(
      `the E2B sandbox ${id} was idle for ${seconds} s and was killed (idle.action: kill)${file ? `; its change was saved to ${file}` : ''}; the next command starts a new sandbox from the local tree`,
    )
  }

  /** Resumes a slot's sandbox paused for idleness (the SDK's connect resumes a paused sandbox). */
  private async wake(slot: Slot, id: string, options: SandboxOpts): Promise<Sandbox | undefined> {
    slot.paused = undefined
    let sandbox: Sandbox
    try {
      sandbox = await this.withRetries('resume', () =>
        Sandbox.connect(id, { ...options, timeoutMs: this.config.timeoutMs }),
      )
    } catch (error) {
      const cause = error instanceof E2bError ? error.cause : error
      if (!(cause instanceof SandboxNotFoundError)) throw error
      this.created.delete(id)
      this.slotOf.delete(id)
      slot.sandboxId = undefined
      this.log(slot, {
        sandboxId: id,
        template: this.config.template,
        action: 'lost',
        reason: 'gone while paused for idleness',
      })
      return undefined
    }
    this.created.set(id, sandbox)
    this.adopt(slot, sandbox)
    this.log(slot, { sandboxId: id, template: this.config.template, action: 'connected', reason: 'resumed after idle' })
    return sandbox
  }

  /** A subagent child's own sandbox: every call inside `run` uses it; `close` saves its patch and ends it. */
  lease(link: SubagentLink): SubagentWorldLease {
    const slot: Slot = { key: `${link.parentSessionId}/${link.id}`, link, lastExtend: 0 }
    return {
      run: (fn) => this.scope.run(slot, fn),
      close: async () => {
        this.disarm(slot)
        const pending = slot.current ?? (slot.paused ? this.scope.run(slot, () => this.sandbox()) : undefined)
        slot.current = undefined
        const sandbox = await pending?.catch(() => undefined)
        if (!sandbox || !this.created.has(sandbox.sandboxId)) return
        this.created.delete(sandbox.sandboxId)
        this.slotOf.delete(sandbox.sandboxId)
        const file = await this.end(sandbox, slot)
        if (file)
          process.stderr.write(
            `dsh: the E2B sandbox ${sandbox.sandboxId} of subagent ${link.id} changed the workspace; patch saved to ${file} (review it, then apply it with: ${await applyCommand(this.state.host, file, this.localTree())})\n`,
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
    return isGone(error)
  }

  /** SDK options shared by every call (key, URLs, request timeout). */
  async connectionOptions(): Promise<SandboxOpts> {
    const apiKey = await readApiKey(this.state)
    return {
      apiKey,
      requestTimeoutMs: this.config.requestTimeoutMs,
      ...(this.config.domain ? { domain: this.config.domain } : {}),
      ...(this.config.apiUrl ? { apiUrl: this.config.apiUrl } : {}),
      ...(this.config.sandboxUrl ? { sandboxUrl: this.config.sandboxUrl } : {}),
    }
  }

  /** The remote working directory and request timeout, for the calls of `remote.ts`. */
  private remote(): remote.RemoteTarget {
    return { cwd: this.cwd, requestTimeoutMs: this.config.requestTimeoutMs }
  }

  private localTree(): string {
    return this.config.upload.from ?? process.cwd()
  }

  private async open(slot: Slot): Promise<Sandbox> {
    const options = await this.connectionOptions()
    if (slot.paused) {
      const woken = await this.wake(slot, slot.paused, options)
      if (woken) return woken
    }
    // The root slot reconnects to `sandboxId` from config, or to the sandbox a continued session
    // ran in (when its run left it paused or running); a child always gets a new one.
    const configured = slot === this.root ? this.config.sandboxId : undefined
    const resumed = !configured && slot === this.root ? await this.resume(options) : undefined
    if (resumed) return resumed
    const reconnect = configured
    // The tree is measured before a sandbox exists: an oversized workspace bills nothing.
    const local = this.localTree()
    const upload =
      !reconnect && this.config.upload.enabled && isDirectory(local)
        ? remote.plan(local, this.config.upload, this.state)
        : undefined
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
        await remote.send(sandbox, this.remote(), local, upload, signal)
        phase = 'preparing the E2B sandbox'
      }
      if (!reconnect && this.config.patch.enabled) {
        // Without git in the template there is no patch at the end; the world still works.
        await remote.baseline(sandbox, this.remote(), signal).then(
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
    const killed = await retrying(() => sandbox.kill(), this.config).then(
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
    const last = rootSessions(this.state.sessions)
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
        const why = `${firstLine(cause instanceof Error ? cause.message : String(cause))}${tries(cause, this.config.retries)}`
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

  /**
   * The change the sandbox made to its working directory since the baseline, as a binary git
   * patch saved locally; nothing is applied. Returns the file, or undefined when nothing changed.
   */
  async savePatch(sandbox: Sandbox): Promise<string | undefined> {
    return remote.savePatch(sandbox, this.remote(), this.config.patch.dir ?? this.state.patchDir)
  }

  private async withRetries(what: string, call: () => Promise<Sandbox>): Promise<Sandbox> {
    try {
      return await retrying(call, this.config, this.state.stopping.signal)
    } catch (error) {
      const explained = this.explain(error, what)
      if (explained.code === 'AUTH') throw (this.state.fatal = explained)
      throw explained
    }
  }

  /** One sentence for an SDK failure. */
  explain(error: unknown, what: string): E2bError {
    return explain(error, what)
  }

  private keepAlive(slot: Slot, sandbox: Sandbox): void {
    // A long session keeps its machine: past half the lifetime, the next use extends it.
    if (Date.now() - slot.lastExtend < this.config.timeoutMs / 2) return
    slot.lastExtend = Date.now()
    void sandbox.setTimeout(this.config.timeoutMs).catch(() => {})
  }

  /** Appends to the sessions a slot serves: the child's own for a child's, else every root session. */
  private log(slot: Slot, event: SandboxLogEvent): void {
    logEvent(this.state.sessions, slot, event)
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
    // Idle timers end here; a sandbox paused for idleness is resumed so its change can be taken.
    for (const slot of new Set([this.root, ...this.slotOf.values()])) {
      this.disarm(slot)
      if (slot.paused) {
        const id = slot.paused
        await this.wake(slot, id, await this.connectionOptions()).catch((error: unknown) => {
          this.created.delete(id)
          this.state.notices.push(
            `the E2B sandbox ${id}, paused while idle, could not be resumed to save its change (${firstLine((error as Error).message)}); end it with: e2b sandbox kill ${id}`,
          )
        })
      }
    }
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
          `the E2B sandbox ${id} changed the workspace; patch saved to ${file} (review it, then apply it with: ${await applyCommand(this.state.host, file, local)})`,
        )
        continue
      }
      const applied = await applyPatch(this.state.host, file, local)
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
  private async end(
    sandbox: Sandbox,
    slot: Slot,
    how: E2bConfig['onExit'] = this.config.onExit,
    reason?: string,
  ): Promise<string | undefined> {
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
        if (file && how !== 'kill') await remote.advanceBaseline(sandbox, this.remote())
      } catch (error) {
        this.home
          .logger('e2b')
          .warn('sandbox %s: the patch could not be saved: %s', sandbox.sandboxId, (error as Error).message)
      }
    }
    if (how === 'keep') return file
    try {
      if (how === 'pause') await retrying(() => sandbox.pause(), this.config)
      else await retrying(() => sandbox.kill(), this.config)
      this.log(slot, {
        sandboxId: sandbox.sandboxId,
        template: this.config.template,
        action: how === 'pause' ? 'paused' : 'killed',
        ...(reason ? { reason } : {}),
      })
      this.home.logger('e2b').info('sandbox %s %s', sandbox.sandboxId, how === 'pause' ? 'paused' : 'killed')
    } catch (error) {
      // Never silent: a sandbox left running bills until its timeout, so the user gets its id.
      const why = `${firstLine(error instanceof Error ? error.message : String(error))}${tries(error, this.config.retries)}`
      const until = `${Math.round(this.config.timeoutMs / 1000)} s after its last use`
      this.state.notices.push(
        how === 'pause'
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
    return applyPatch(this.state.host, file, this.localTree())
  }

  /**
   * The change the run's sandbox made since its baseline (or the last settled review), saved as a
   * patch file for the user to approve while the sandbox keeps running (the web's panel). Never
   * creates a sandbox: undefined when there is none yet, or no change. Replaces an unsettled review.
   */
  async review(): Promise<E2bReview | undefined> {
    const pending = this.root.current
    const sandbox = pending ? await pending.catch(() => undefined) : undefined
    if (!sandbox || !this.baselined.has(sandbox.sandboxId)) return undefined
    const dir = this.config.patch.dir ?? this.state.patchDir
    if (!dir) throw new E2bError('UNAVAILABLE', 'the E2B patch directory is unknown (no patch.dir and no DSH_HOME)')
    const name = `${sandbox.sandboxId}-${Date.now().toString(36)}`
    const taken = await remote.snapshot(sandbox, this.remote(), dir, name).catch((error: unknown) => {
      if (this.isGone(error)) throw new E2bError('SANDBOX_LOST', this.lost(sandbox, error), { cause: error })
      throw this.explain(error, 'review the change of')
    })
    if (!taken) return undefined
    this.state.review = { file: taken.file, sandbox, tree: taken.tree }
    return {
      sandboxId: sandbox.sandboxId,
      file: taken.file,
      files: patchFiles(taken.patch),
      dir: this.localTree(),
      patch:
        taken.patch.length > 65_536
          ? `${taken.patch.slice(0, 65_536)}\n[... cut; the file holds all of it]\n`
          : taken.patch,
    }
  }

  /**
   * Settles the pending review: `apply` runs the same checked `git apply` as `--apply` (a patch
   * that does not apply changes nothing and stays offered); `keep` leaves the local tree alone and
   * the file where it is. Either way the sandbox's baseline moves to the reviewed tree.
   */
  async settle(file: string, action: 'apply' | 'keep'): Promise<E2bSettled> {
    const review = this.state.review
    if (!review || review.file !== file)
      throw new ApiError(
        'REVIEW_NOT_FOUND',
        `${file} is not the change offered now (settled already, or replaced by a newer review)`,
        {
          status: 409,
          field: 'file',
        },
      )
    this.state.review = undefined
    const local = this.localTree()
    let result: E2bSettled
    if (action === 'apply') {
      result = await applyPatch(this.state.host, file, local)
      if (!result.ok) {
        this.state.review = review
        return result
      }
    } else
      result = {
        ok: true,
        line: `kept the patch ${file}; ${local} was left as it was (apply it later with: ${await applyCommand(this.state.host, file, local)})`,
      }
    const slot = this.slotOf.get(review.sandbox.sandboxId) ?? this.root
    this.log(slot, {
      sandboxId: review.sandbox.sandboxId,
      template: this.config.template,
      action: 'patched',
      patch: file,
    })
    try {
      await remote.advanceTo(review.sandbox, this.remote(), review.tree)
    } catch (error) {
      // The sandbox went away: nothing more will come from it, so nothing is offered twice.
      this.home
        .logger('e2b')
        .warn('sandbox %s: the baseline did not move: %s', review.sandbox.sandboxId, (error as Error).message)
    }
    return result
  }

  /** At unload: ends what this run still holds (per `onExit`); a reconnected sandbox is left as it was. */
  private async release(): Promise<void> {
    const report = await this.finish()
    // The user's tree changes only with consent: the patch is saved and named, never applied here.
    for (const line of report.lines) process.stderr.write(`dsh: ${line}\n`)
  }
}

export { planUpload, packUpload, UploadTooLarge, ALWAYS_EXCLUDED } from './upload.ts'
export { Sandbox, CommandExitError, FileNotFoundError, NotFoundError, InvalidArgumentError } from 'e2b'
export const name = 'e2b'
export default E2bService
