// @dsh/e2b: the one owner of this run's E2B sandbox (`ctx.e2b`). The filesystem and subprocess
// providers of the e2b world await its single SDK handle, so files and processes live in the same
// remote machine. The sandbox is created on first use (not at boot: a run that never touches the
// world never bills one), its id is logged in the live sessions, and every sandbox this run
// created is killed when the plugin unloads.
import type { Context } from 'cordis'
import { Service } from 'cordis'
import type Schema from 'schemastery'
import { Sandbox, type SandboxOpts } from 'e2b'
import { AsyncLocalStorage } from 'node:async_hooks'
import { join, resolve } from 'node:path'
import type {} from '@dsh/home-paths'
import type {} from '@dsh/credentials'
import type {} from '@dsh/session'
import type { SubagentLink, SubagentWorldLease } from '@dsh/subagent'
import type { SubprocessService } from '@dsh/subprocess'
import type {} from '@dsh/session-persistence'
import type {} from '@dsh/api-gateway'
import type {} from '@dsh/agent'
import { e2bApply, e2bKeep, e2bReview, type E2bReview, type E2bSettled } from './contract.ts'
import { explain, isGone, logEvent, readApiKey, retrying } from './calls.ts'
import { E2bConfigSchema } from './config.ts'
import { abandon, endSandbox, loseSandbox, type EndingOwner } from './ending.ts'
import { disarm, markBusy, takeIdleNote, touch, wake, wakeAll, type IdleOwner } from './idle.ts'
import { offerChange, type ConsentOwner, type Offer } from './consent.ts'
import { reconnectContinued, type ReconnectOwner } from './reconnect.ts'
import { applyCommand, applyPatch } from './local-patch.ts'
import * as remote from './remote.ts'
import { settleReview, takeReview, type PendingReview, type ReviewOwner } from './review.ts'
import {
  E2bError,
  type E2bConfig,
  type FinishReport,
  type IdleClock,
  type SandboxLogEvent,
  type Slot,
} from './types.ts'
import { interrupted, isDirectory, patchFiles, readFileSafe } from './util.ts'

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
export type { Offer } from './consent.ts'

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
    review?: PendingReview
    /** The idle timer's clock (`useClock`). */
    clock: IdleClock
    /** Where lines for the user go while the run is on (`onNotice`; default: stderr). */
    sinks: Array<(line: string) => void>
  } = {
    sinks: [],
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
  /** The slots of other local folders than the run's tree, by folder (`within`: a session's cwd). */
  private readonly workspaces = new Map<string, Slot>()
  private readonly home: Context
  /** What the code cut into idle.ts, review.ts, ending.ts and reconnect.ts uses of this service. */
  private readonly parts: IdleOwner & ReviewOwner & EndingOwner & ReconnectOwner & ConsentOwner

  constructor(ctx: Context, config: Partial<E2bConfig> = {}) {
    super(ctx, 'e2b')
    this.home = ctx
    this.config = E2bService.Config(config)
    this.cwd = this.config.cwd ?? process.cwd()
    if (!this.cwd.startsWith('/'))
      throw new TypeError(`e2b: cwd must be an absolute path, got ${JSON.stringify(this.cwd)}`)
    this.parts = {
      config: this.config,
      home: ctx,
      state: this.state,
      root: this.root,
      created: this.created,
      slotOf: this.slotOf,
      baselined: this.baselined,
      log: (slot, event) => this.log(slot, event),
      adopt: (slot, sandbox) => this.adopt(slot, sandbox),
      end: (sandbox, slot, how, reason) => endSandbox(this.parts, sandbox, slot, how, reason),
      savePatch: (sandbox, slot) => this.savePatch(sandbox, slot),
      connectionOptions: () => this.connectionOptions(),
      withRetries: (what, call) => this.withRetries(what, call),
      notify: (line) => this.notify(line),
      remote: (slot) => this.remote(slot),
      localTree: (slot) => this.localTree(slot),
      isGone: (error) => this.isGone(error),
      lost: (sandbox, cause) => this.lost(sandbox, cause),
      explain: (error, what) => this.explain(error, what),
    }
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
    // A sandbox that went away while idle took the files only it held: the next request of an
    // agent in that slot (the run's, or a child's inside its lease) says so in one line, once.
    ctx.on('agent/pre-step', async (payload, next) => {
      const cwd = payload.agent.cwd
      const note = takeIdleNote(
        this.scope.getStore() ?? (cwd ? this.workspaces.get(resolve(cwd)) : undefined) ?? this.root,
        payload.agent.session?.id,
      )
      if (note !== undefined)
        payload.messages.unshift({ content: note, source: { kind: 'plugin', plugin: '@dsh/e2b' } })
      return next()
    })
    ctx.effect(() => () => this.release(), 'e2b: end the sandboxes this run created')
  }

  /** The id of the live sandbox of the calling scope (the run's, or a child's), once one exists. */
  get sandboxId(): string | undefined {
    return this.slot().sandboxId
  }

  /**
   * True inside a subagent child's lease (`world: "e2b"`): the caller was given a sandbox of its
   * own, whatever world its session's folder runs in (a host with a world per workspace asks).
   */
  get leased(): boolean {
    return this.scope.getStore()?.link !== undefined
  }

  private slot(): Slot {
    return this.scope.getStore() ?? this.root
  }

  /**
   * Runs `fn` with the sandbox of the local folder `dir` (a session's cwd): the run's own when `dir`
   * is the run's tree, else one sandbox per folder, holding an upload of that folder at its path,
   * whose change comes back to it. Inside a subagent child's lease the child's sandbox stays.
   */
  within<T>(dir: string, fn: () => T): T {
    if (this.scope.getStore()) return fn()
    return this.scope.run(this.workspaceSlot(dir), fn)
  }

  private workspaceSlot(dir: string): Slot {
    const folder = resolve(dir)
    if (folder === this.cwd || folder === this.localTree()) return this.root
    let slot = this.workspaces.get(folder)
    if (!slot) this.workspaces.set(folder, (slot = { key: `workspace:${folder}`, dir: folder, lastExtend: 0 }))
    return slot
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
      touch(this.parts, slot)
      return sandbox
    })
  }

  /**
   * Marks the calling scope's sandbox busy (a remote command runs there) until the answered
   * function is called: an idle pause or kill never lands under a running command.
   */
  busy(): () => void {
    return markBusy(this.parts, this.slot())
  }

  /**
   * Takes the lines this world says to the user while the run is on (a continued session's sandbox
   * found gone, a subagent's patch saved): the newest sink gets them, e.g. a TUI's transcript, where
   * a stderr line would land under the screen. Without one they go to stderr. Returns the disposer.
   */
  onNotice(sink: (line: string) => void): () => void {
    this.state.sinks.push(sink)
    return () => {
      const at = this.state.sinks.lastIndexOf(sink)
      if (at >= 0) this.state.sinks.splice(at, 1)
    }
  }

  /** One line for the user now (no `dsh: ` prefix, no newline). */
  private notify(line: string): void {
    const sink = this.state.sinks.at(-1)
    if (sink) {
      try {
        sink(line)
        return
      } catch {
        // a failing sink falls back to stderr
      }
    }
    process.stderr.write(`dsh: ${line}\n`)
  }

  /** Replaces the idle timer's clock (tests drive it by hand instead of waiting). */
  useClock(clock: IdleClock): void {
    this.state.clock = clock
  }

  /** A subagent child's own sandbox: every call inside `run` uses it; `close` saves its patch and ends it. */
  lease(link: SubagentLink): SubagentWorldLease {
    // A child of a session in another folder works on a copy of that folder.
    const parentCwd = this.state.sessions?.get(link.parentSessionId)?.cwd
    const dir = parentCwd === undefined ? undefined : this.workspaceSlot(parentCwd).dir
    const slot: Slot = { key: `${link.parentSessionId}/${link.id}`, link, lastExtend: 0, ...(dir ? { dir } : {}) }
    return {
      run: (fn) => this.scope.run(slot, fn),
      close: async () => {
        disarm(this.parts, slot)
        const pending = slot.current ?? (slot.paused ? this.scope.run(slot, () => this.sandbox()) : undefined)
        slot.current = undefined
        const sandbox = await pending?.catch(() => undefined)
        if (!sandbox || !this.created.has(sandbox.sandboxId)) return
        this.created.delete(sandbox.sandboxId)
        this.slotOf.delete(sandbox.sandboxId)
        const file = await endSandbox(this.parts, sandbox, slot)
        if (file)
          this.notify(
            `the E2B sandbox ${sandbox.sandboxId} of subagent ${link.id} changed the workspace; patch saved to ${file} (review it, then apply it with: ${await applyCommand(this.state.host, file, this.localTree(slot))})`,
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
    return loseSandbox(this.parts, sandbox, cause)
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

  /** The remote working directory (a workspace slot's: its folder) and request timeout, for `remote.ts`. */
  private remote(slot?: Slot): remote.RemoteTarget {
    return { cwd: slot?.dir ?? this.cwd, requestTimeoutMs: this.config.requestTimeoutMs }
  }

  /** The local tree a slot's sandbox holds a copy of, and that its change applies to. */
  private localTree(slot?: Slot): string {
    return slot?.dir ?? this.config.upload.from ?? process.cwd()
  }

  private async open(slot: Slot): Promise<Sandbox> {
    const options = await this.connectionOptions()
    if (slot.paused) {
      const woken = await wake(this.parts, slot, slot.paused, options)
      if (woken) return woken
    }
    // The root slot reconnects to `sandboxId` from config, or to the sandbox a continued session
    // ran in (when its run left it paused or running); a child always gets a new one.
    const configured = slot === this.root ? this.config.sandboxId : undefined
    const resumed = !configured && slot === this.root ? await reconnectContinued(this.parts, options) : undefined
    if (resumed) return resumed
    const reconnect = configured
    // The tree is measured before a sandbox exists: an oversized workspace bills nothing.
    const local = this.localTree(slot)
    const target = this.remote(slot)
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
            metadata: {
              ...this.config.metadata,
              dsh: '1',
              ...(slot.link ? { 'dsh-subagent': slot.link.id } : {}),
              ...(slot.dir ? { 'dsh-workspace': slot.dir } : {}),
            },
          }),
    )
    if (!reconnect) this.created.set(sandbox.sandboxId, sandbox)
    this.adopt(slot, sandbox)
    let phase = 'preparing the E2B sandbox'
    try {
      // Created while the app was being stopped: the create itself is never aborted (an aborted
      // create could leave a sandbox whose id we never learn), so its sandbox is ended here.
      signal.throwIfAborted()
      const baselined = await remote.prepare(sandbox, target, local, {
        upload,
        signal,
        baseline: !reconnect && this.config.patch.enabled,
        onPhase: (now) => {
          phase = now
        },
        onNoBaseline: (error) =>
          this.home
            .logger('e2b')
            .warn('sandbox %s: no baseline for the end-of-run patch: %s', sandbox.sandboxId, (error as Error).message),
      })
      if (baselined) this.baselined.add(sandbox.sandboxId)
      signal.throwIfAborted()
    } catch (error) {
      if (signal.aborted && !reconnect) throw await abandon(this.parts, slot, sandbox, phase, error)
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

  private adopt(slot: Slot, sandbox: Sandbox): void {
    slot.sandboxId = sandbox.sandboxId
    slot.lastExtend = Date.now()
    this.slotOf.set(sandbox.sandboxId, slot)
  }

  /**
   * The change the sandbox made to its working directory since the baseline, as a binary git
   * patch saved locally; nothing is applied. Returns the file, or undefined when nothing changed.
   */
  async savePatch(sandbox: Sandbox, slot = this.slotOf.get(sandbox.sandboxId)): Promise<string | undefined> {
    return remote.savePatch(sandbox, this.remote(slot), this.config.patch.dir ?? this.state.patchDir)
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
    await wakeAll(this.parts, new Set([this.root, ...this.workspaces.values(), ...this.slotOf.values()]))
    const sandboxes = [...this.created.values()]
    this.created.clear()
    this.root.current = undefined
    for (const slot of this.workspaces.values()) slot.current = undefined
    const slots = sandboxes.map((sandbox) => this.slotOf.get(sandbox.sandboxId) ?? this.root)
    const saved = await Promise.all(sandboxes.map((sandbox, i) => endSandbox(this.parts, sandbox, slots[i])))
    this.slotOf.clear()
    // What the user must know first: an interrupted setup, a sandbox that could not be ended or
    // reconnected (a child's included, ended before).
    const report: FinishReport = { lines: this.state.notices.splice(0), failed: false, patches: [], interrupted }
    for (const [i, file] of saved.entries()) {
      if (!file) continue
      const id = sandboxes[i].sandboxId
      const local = this.localTree(slots[i])
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
  review(): Promise<E2bReview | undefined> {
    return takeReview(this.parts)
  }

  /**
   * The change the sandbox of the local folder `dir` made since its baseline (or its last offer),
   * saved as a patch file, to be applied or kept (`@dsh/e2b/sessions` asks when a turn ends).
   * Never creates a sandbox: undefined when there is none yet, or no change.
   */
  offer(dir: string): Promise<Offer | undefined> {
    return offerChange(this.parts, this.workspaceSlot(dir))
  }

  /**
   * Settles the pending review: `apply` runs the same checked `git apply` as `--apply` (a patch
   * that does not apply changes nothing and stays offered); `keep` leaves the local tree alone and
   * the file where it is. Either way the sandbox's baseline moves to the reviewed tree.
   */
  settle(file: string, action: 'apply' | 'keep'): Promise<E2bSettled> {
    return settleReview(this.parts, file, action)
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
