// @dsh/sandbox-policy: the one owner of sandbox-policy resolution (`ctx.sandboxPolicy`). It holds the
// deployment default mode, each session's durable mode override (a logged `sandbox/mode` event) and
// its immutable workspace root, and hands every enforcing capability (bash-sandbox, fs-sandbox) one
// resolved policy per call. Before each model request it tells the model the policy in force, as a
// logged user message that is only appended when the policy text changed (see README).
import { lstatSync, opendirSync, readdirSync, readFileSync, realpathSync, statSync, type Dir } from 'node:fs'
import { homedir, tmpdir } from 'node:os'
import { isAbsolute, join, resolve as resolvePath } from 'node:path'
import { type Context, Service } from 'cordis'
import Schema from 'schemastery'
import type {} from '@dsh/agent'
import type {} from '@dsh/app-boot'
import type { Session } from '@dsh/session'
import {
  describePolicy,
  GIT_DIR_CONTROL_PATHS,
  isSandboxMode,
  PROJECT_CONTROL_PATHS,
  SANDBOX_MODES,
  type SandboxMode,
  type SandboxPolicy,
  type SandboxRunnerInfo,
} from '@dsh/sandbox'
import type {} from '@dsh/session-persistence'
import type {} from '@dsh/permission-presets'
import type {} from '@dsh/home-paths'
import { plainService } from '@dsh/plain-service'
import { existingProcessTempDir } from '@dsh/spill-files'
import { harnessReadRefusal, type HarnessReadOptions } from './harness-read.ts'

export {
  harnessReadRefusal,
  isProcessEntry,
  openedPath,
  realLocation,
  type HarnessReadOptions,
} from './harness-read.ts'

declare module 'cordis' {
  interface Context {
    sandboxPolicy: SandboxPolicyService
  }
  interface Events {
    /** A session's sandbox mode changed (override set or cleared). */
    'sandbox/mode-changed'(sessionId: string, mode: SandboxMode): void
  }
}

declare module '@dsh/session' {
  interface SessionEventMap {
    /** A durable per-session mode override; `mode: null` clears it. */
    'sandbox/mode': { mode: SandboxMode | null }
  }
}

export interface SandboxPolicyConfig {
  defaultMode: SandboxMode
  fallbackRoot?: string
  network: boolean
  tempDirs: string[]
  writableRoots: string[]
  readOnlyPaths: string[]
  hiddenPaths: string[]
  announce: boolean
}

/** The `source` of the policy announcement messages. */
export const ANNOUNCE_SOURCE = { kind: 'plugin', plugin: 'sandbox-policy', label: 'sandbox policy' } as const

export interface ResolveInput {
  sessionId?: string
  /** The call's cwd; the workspace root of a session the store does not know, or without a session. */
  cwd?: string
}

const DEFAULT_TEMP_DIRS = [...new Set(['/tmp', tmpdir()])]

export class SandboxPolicyService extends Service {
  static Config: Schema<Partial<SandboxPolicyConfig>, SandboxPolicyConfig> = Schema.object({
    defaultMode: Schema.union(SANDBOX_MODES as SandboxMode[])
      .default('workspace-write')
      .description('Mode of a session with no override (and no permission preset choosing one).'),
    fallbackRoot: Schema.string().description(
      'Workspace root of calls without a session or cwd. Default: the process cwd.',
    ),
    network: Schema.boolean().default(false).description('Allow network access in read-only and workspace-write.'),
    tempDirs: Schema.array(String)
      .default(DEFAULT_TEMP_DIRS)
      .description('Temp directories writable in workspace-write (missing ones are skipped).'),
    writableRoots: Schema.array(String)
      .default([])
      .description('Extra absolute directories writable in workspace-write.'),
    readOnlyPaths: Schema.array(String)
      .default([])
      .description(
        'Extra absolute paths kept read-only in confining modes, even under a writable root (the dsh home always is).',
      ),
    hiddenPaths: Schema.array(String)
      .default([])
      .description('Extra absolute paths unreadable in confining modes (the home credential files always are).'),
    announce: Schema.boolean()
      .default(true)
      .description('Tell the model the current policy before a request whenever it changed.'),
  })

  readonly config: SandboxPolicyConfig
  private readonly overrides = new Map<string, SandboxMode | null>()
  private readonly roots = new Map<string, string>()
  private readonly announced = new WeakMap<Session, string | undefined>()
  /** Optional services by name, as plain objects; an entry is dropped when Cordis reports that service changed. */
  private readonly optional = new Map<string, unknown>()

  constructor(ctx: Context, config: SandboxPolicyConfig) {
    super(ctx, 'sandboxPolicy')
    for (const [field, list] of [
      ['tempDirs', config.tempDirs],
      ['writableRoots', config.writableRoots],
      ['readOnlyPaths', config.readOnlyPaths ?? []],
      ['hiddenPaths', config.hiddenPaths ?? []],
    ] as const) {
      for (const dir of list)
        if (!isAbsolute(dir))
          throw new TypeError(`sandbox-policy: ${field} must hold absolute paths, got ${JSON.stringify(dir)}`)
    }
    if (config.fallbackRoot !== undefined && !isAbsolute(config.fallbackRoot)) {
      throw new TypeError(
        `sandbox-policy: fallbackRoot must be an absolute path, got ${JSON.stringify(config.fallbackRoot)}`,
      )
    }
    this.config = config
    // Optional services are read several times per call; `ctx.get` builds a tracing proxy each time
    // (and every call through it a shadow), so the plain objects are kept until Cordis reports
    // that the service changed.
    ctx.on('internal/service', (name) => void plainService(this).optional.delete(name))
    // `sandbox/mode` is logged: register it so sessions holding an override load again.
    ctx.inject(['sessionPersistence'], (inner) => void inner.sessionPersistence.registerEventType('sandbox/mode'))
    if (config.announce) {
      ctx.on(
        'agent/pre-step',
        async (payload, next) => {
          const text = await this.announcement(payload.agent.session, payload.agent.cwd)
          if (text !== undefined) payload.messages.unshift({ content: text, source: { ...ANNOUNCE_SOURCE } })
          return next()
        },
        { prepend: true },
      )
    }
  }

  /** The mode in force: the session's override, else the permission preset's mode, else `defaultMode`. */
  modeFor(sessionId?: string): SandboxMode {
    // Asked several times per tool call and per step: own state through the plain object (see unshadow).
    const self = plainService(this)
    if (sessionId !== undefined) {
      const override = self.override(sessionId)
      if (override) return override
    }
    const presets = self.service('permissionPresets')
    if (presets && typeof presets.modeFor === 'function') {
      const mode = presets.modeFor(sessionId)
      if (isSandboxMode(mode)) return mode
    }
    return self.config.defaultMode
  }

  /**
   * Sets (or with `null` clears) a session's override. Logged as `sandbox/mode` in the session when
   * the session store knows it, so the override survives a resume.
   */
  setMode(sessionId: string, mode: SandboxMode | null): void {
    if (typeof sessionId !== 'string' || sessionId === '')
      throw new TypeError('sandboxPolicy.setMode: sessionId must be a non-empty string')
    if (mode !== null && !isSandboxMode(mode))
      throw new TypeError(
        `sandboxPolicy.setMode: unknown mode ${JSON.stringify(mode)} (valid: ${SANDBOX_MODES.join(', ')})`,
      )
    this.overrides.set(sessionId, mode)
    this.session(sessionId)?.append('sandbox/mode', { mode })
    this.ctx.emit('sandbox/mode-changed', sessionId, this.modeFor(sessionId))
  }

  /** The session's workspace root: fixed at first use (the session's cwd), symlinks resolved. */
  workspaceRoot(input: ResolveInput = {}): string {
    const { sessionId } = input
    if (sessionId !== undefined) {
      const known = this.roots.get(sessionId)
      if (known) return known
    }
    const base = this.session(sessionId)?.cwd ?? input.cwd ?? this.config.fallbackRoot ?? process.cwd()
    const root = realpathOrSelf(resolvePath(base))
    if (sessionId !== undefined) this.roots.set(sessionId, root)
    return root
  }

  /** One resolved policy for one call. */
  resolve(input: ResolveInput = {}): SandboxPolicy {
    const self = plainService(this)
    const mode = self.modeFor(input.sessionId)
    const workspaceRoot = self.workspaceRoot(input)
    if (mode === 'danger-full-access') return { mode, workspaceRoot, writableRoots: [], network: true }
    const writableRoots =
      mode === 'workspace-write'
        ? [
            ...new Set([
              workspaceRoot,
              ...self.config.writableRoots.map(realpathOrSelf),
              ...self.config.tempDirs.map(realpathOrSelf),
            ]),
          ]
        : []
    const { readOnlyPaths, hiddenPaths } = self.protectedPaths()
    // The project control files of the workspace and of each configured writable root (the temp
    // directories are nobody's project): read-only for commands, refused to file edits.
    const controlPaths = [
      ...new Set([workspaceRoot, ...self.config.writableRoots.map(realpathOrSelf)].flatMap(projectControlPaths)),
    ]
    // dsh's private temp directory (job spills, bash-local spills; once created) lies under /tmp, a writable root:
    // a confined command must neither read-modify nor delete what the harness keeps there. It goes
    // with the control paths, which a runner makes read-only where it can without refusing to run
    // (the Landlock runner cannot carve a read-only hole in a writable tree, and a readOnlyPaths
    // entry inside /tmp would make it refuse every command).
    const spill = privateTempDir()
    if (spill !== undefined && mode === 'workspace-write') controlPaths.push(spill)
    return {
      mode,
      workspaceRoot,
      writableRoots,
      network: self.config.network,
      readOnlyPaths,
      hiddenPaths,
      controlPaths,
    }
  }

  /**
   * What no confined command or file edit may change (the dsh home: profiles, patch layers, the
   * layer cache, sessions and spills) or read (the home's credential files), plus the configured
   * extras. Real paths, so a symlinked home is protected where it really lies.
   */
  protectedPaths(): { readOnlyPaths: string[]; hiddenPaths: string[] } {
    const home = realpathOrSelf(this.home())
    // The patch layers this process booted from (a `--patch` file or a bundle may lie in the
    // workspace): a confined command that rewrote one would run its `!!js` at the next start.
    const layers = plainService(this).service('bootInfo')?.layerFiles ?? []
    const readOnlyPaths = [
      ...new Set([home, ...layers.map(realpathOrSelf), ...(this.config.readOnlyPaths ?? []).map(realpathOrSelf)]),
    ]
    // Each credential file by its name in the home and, when it is a link (a dotfiles manager's
    // layout), by where it really lies: reading the real file directly must be refused as well.
    const credentials = [join(home, '.credentials.yaml'), join(home, '.env')]
    const hiddenPaths = [
      ...new Set([
        ...credentials,
        ...credentials.map(realpathOrSelf),
        ...(this.config.hiddenPaths ?? []).map(realpathOrSelf),
      ]),
    ]
    return { readOnlyPaths, hiddenPaths }
  }

  /**
   * Why the harness must not read `path` for the model in the call's session, or undefined (see
   * `harnessReadRefusal`): the policy of `input` is resolved first.
   */
  readRefusal(path: string, input: ResolveInput = {}, options: HarnessReadOptions = {}): string | undefined {
    return harnessReadRefusal(path, plainService(this).resolve(input), options)
  }

  /** `ctx.homePaths.home` when loaded, else `$DSH_HOME` (a leading `~/` expanded), else `~/.dsh`. */
  private home(): string {
    const service = plainService(this).service('homePaths')
    if (service && typeof service.home === 'string') return service.home
    const raw = process.env.DSH_HOME?.trim()
    if (!raw) return join(homedir(), '.dsh')
    if (raw === '~') return homedir()
    if (raw.startsWith('~/')) return join(homedir(), raw.slice(2))
    return resolvePath(raw)
  }

  /** The model-facing statement of the policy for a session. */
  describe(input: ResolveInput = {}): string {
    const policy = this.resolve(input)
    return (
      `[sandbox policy] ${describePolicy(policy)}` +
      (policy.mode === 'danger-full-access'
        ? ''
        : ' Reading is always allowed. A command or edit the sandbox blocks fails with a permission error; the result then says so and how to ask the user for an exception.')
    )
  }

  /** The text to announce before the next request of `session`, or undefined when it is unchanged. */
  private async announcement(session: Session, cwd: string): Promise<string | undefined> {
    const input = { sessionId: session.id, cwd }
    // A remote world's provider is the confinement: its own statement replaces the local policy's.
    // It states that without a probe; a local runner is described (probed) only in confining modes,
    // so danger-full-access never starts the sandbox probe.
    const stated = plainService(this).service('sandbox')?.confinement
    const danger = this.modeFor(session.id) === 'danger-full-access'
    const info = danger && typeof stated !== 'string' ? undefined : await this.runnerInfo()
    const confinement =
      typeof stated === 'string' ? stated : typeof info?.confinement === 'string' ? info.confinement : undefined
    let text = confinement !== undefined ? `[sandbox policy] ${confinement}` : this.describe(input)
    // What the enforcing runner cannot confine (e.g. the Landlock fallback) is part of the policy.
    const runnerNotes = danger && confinement === undefined ? [] : notesOf(info)
    if (runnerNotes.length > 0) text += ` ${runnerNotes.join(' ')}`
    const last = this.announced.has(session) ? this.announced.get(session) : lastAnnouncement(session)
    if (last === text) {
      this.announced.set(session, text)
      return undefined
    }
    this.announced.set(session, text)
    return text
  }

  private async runnerInfo(): Promise<SandboxRunnerInfo | undefined> {
    const sandbox = plainService(this).service('sandbox')
    if (!sandbox || typeof sandbox.describe !== 'function') return undefined
    try {
      return await sandbox.describe()
    } catch {
      return undefined
    }
  }

  private override(sessionId: string): SandboxMode | null {
    if (this.overrides.has(sessionId)) return this.overrides.get(sessionId) ?? null
    const logged = this.session(sessionId)?.last('sandbox/mode')?.data.mode ?? null
    const mode = isSandboxMode(logged) ? logged : null
    this.overrides.set(sessionId, mode)
    return mode
  }

  private session(sessionId: string | undefined): Session | undefined {
    if (sessionId === undefined) return undefined
    return plainService(this).service('sessions')?.get(sessionId)
  }

  /** An optional service as its plain object (cached until it changes, see `optional`). */
  private service<K extends 'permissionPresets' | 'bootInfo' | 'homePaths' | 'sandbox' | 'sessions'>(
    name: K,
  ): Context[K] | undefined {
    if (this.optional.has(name)) return this.optional.get(name) as Context[K] | undefined
    const value = this.ctx.get(name)
    const plain = value === undefined || value === null ? undefined : plainService(value as object)
    this.optional.set(name, plain)
    return plain as Context[K] | undefined
  }
}

function notesOf(info: SandboxRunnerInfo | undefined): string[] {
  const notes = info?.notes
  return Array.isArray(notes) ? notes.filter((note): note is string => typeof note === 'string') : []
}

/** The text of the newest announcement in the log (a resumed session keeps its cache prefix). */
function lastAnnouncement(session: Session): string | undefined {
  const events = session.events
  for (let i = events.length - 1; i >= 0; i--) {
    const event = events[i]
    if (event.type !== 'user/message') continue
    const data = event.data as {
      content: Array<{ type: string; text?: string }>
      source: { kind: string; plugin?: string }
    }
    if (data.source.kind === 'plugin' && data.source.plugin === ANNOUNCE_SOURCE.plugin) {
      return data.content.map((block) => (block.type === 'text' ? (block.text ?? '') : '')).join('')
    }
  }
  return undefined
}

/** This process's private temp directory once something created it, symlinks resolved. */
function privateTempDir(): string | undefined {
  const dir = existingProcessTempDir()
  return dir === undefined ? undefined : realpathOrSelf(dir)
}

/** Most git directories `projectControlPaths` visits under `modules/` and `worktrees/` (a bound on a huge tree). */
const MAX_GIT_DIRS = 256

/**
 * The project control files of `root` as absolute paths (see `PROJECT_CONTROL_PATHS`), present or
 * not: each entry of the list under `root`, and for git the control entries of the real git
 * directory. A `.git` that is not a directory (a worktree's or submodule's `.git` file, or none
 * yet) is itself a control path, since it says where git finds its configuration; the directory
 * it points to, its common directory (`commondir`), the submodules' directories (`modules/`) and
 * the linked worktrees' directories (`worktrees/`) each contribute hooks, config,
 * config.worktree and commondir. An existing entry reached through symlinks is listed under its
 * real path as well.
 */
export function projectControlPaths(root: string): string[] {
  const paths = new Set<string>()
  const add = (path: string) => {
    paths.add(path)
    // Most entries do not exist: look without throwing (an exception per path costs more than the rest).
    if (lstatOrUndefined(path) === undefined) return
    const real = realpathOrSelf(path)
    if (real !== path) paths.add(real)
  }
  for (const entry of PROJECT_CONTROL_PATHS) add(join(root, entry))
  const seen = new Set<string>()
  const visit = (dir: string, depth: number) => {
    if (seen.size >= MAX_GIT_DIRS || seen.has(dir) || depth > 8) return
    seen.add(dir)
    for (const entry of GIT_DIR_CONTROL_PATHS) add(join(dir, entry))
    const common = readOrEmpty(join(dir, 'commondir')).trim()
    if (common) visit(realpathOrSelf(resolvePath(dir, common)), depth + 1)
    for (const nested of gitDirsUnder(join(dir, 'modules'), 4)) visit(nested, depth + 1)
    for (const worktree of gitDirsUnder(join(dir, 'worktrees'), 1)) visit(worktree, depth + 1)
  }
  /** The git files of the work tree at `tree`; `missing` lists a `.git` that does not exist yet. */
  const workTree = (tree: string, missing: boolean) => {
    const dotGit = join(tree, '.git')
    const link = lstatOrUndefined(dotGit)
    if (link?.isFile()) {
      add(dotGit)
      const pointer = /^gitdir:\s*(.+?)\s*$/m.exec(readOrEmpty(dotGit))
      if (pointer) visit(realpathOrSelf(resolvePath(tree, pointer[1])), 0)
    } else if (link === undefined) {
      if (missing) add(dotGit)
    } else if (statOrUndefined(dotGit)?.isDirectory()) {
      visit(realpathOrSelf(dotGit), 0)
    }
  }
  workTree(root, true)
  // Repositories one level down (a directory of checkouts opened as the workspace): their hooks
  // and config run when the user later works in them. (A repository created in an existing
  // subdirectory is seen once the root itself changes; see childRepositories.)
  for (const child of childRepositories(root)) workTree(child, false)
  return [...paths]
}

/** Most entries of a writable root scanned for repositories one level down (a home directory is skipped). */
const MAX_ROOT_ENTRIES = 512

/** Per root: its mtime when scanned and the subdirectories that held a `.git` then. */
const childRepoCache = new Map<string, { mtimeMs: number; repos: string[] }>()

/**
 * The subdirectories of `root` holding a `.git` (not followed through symlinks), none when it has
 * more than MAX_ROOT_ENTRIES entries. Rescanned only when the root's mtime changes (an entry
 * added, removed or renamed), since this runs for every resolved policy.
 */
function childRepositories(root: string): string[] {
  const mtimeMs = statOrUndefined(root)?.mtimeMs
  if (mtimeMs === undefined) return []
  const cached = childRepoCache.get(root)
  if (cached && cached.mtimeMs === mtimeMs) return cached.repos
  const repos: string[] = []
  let dir: Dir | undefined
  try {
    dir = opendirSync(root)
    let count = 0
    for (let entry = dir.readSync(); entry !== null; entry = dir.readSync()) {
      if (++count > MAX_ROOT_ENTRIES) {
        repos.length = 0
        break
      }
      if (!entry.isDirectory() || entry.name === '.git' || entry.name === 'node_modules') continue
      const child = join(root, entry.name)
      if (lstatOrUndefined(join(child, '.git')) !== undefined) repos.push(child)
    }
  } catch {
    repos.length = 0
  } finally {
    dir?.closeSync()
  }
  if (childRepoCache.size > 64) childRepoCache.clear()
  childRepoCache.set(root, { mtimeMs, repos })
  return repos
}

/** Git directories (a directory holding `HEAD`) at most `levels` below `dir` (submodule names may hold slashes). */
function gitDirsUnder(dir: string, levels: number): string[] {
  let names: string[]
  if (!statOrUndefined(dir)?.isDirectory()) return []
  try {
    names = readdirSync(dir)
  } catch {
    return []
  }
  const found: string[] = []
  for (const name of names.slice(0, MAX_GIT_DIRS)) {
    const path = join(dir, name)
    if (!statOrUndefined(path)?.isDirectory()) continue
    if (statOrUndefined(join(path, 'HEAD'))?.isFile()) found.push(realpathOrSelf(path))
    else if (levels > 1) found.push(...gitDirsUnder(path, levels - 1))
  }
  return found
}

function lstatOrUndefined(path: string) {
  try {
    return lstatSync(path, { throwIfNoEntry: false })
  } catch {
    return undefined
  }
}

function statOrUndefined(path: string) {
  try {
    return statSync(path, { throwIfNoEntry: false })
  } catch {
    return undefined
  }
}

function readOrEmpty(path: string): string {
  if (!statOrUndefined(path)?.isFile()) return ''
  try {
    return readFileSync(path, 'utf8').slice(0, 4096)
  } catch {
    return ''
  }
}

/**
 * The real path (symlinks resolved), or `path` itself when it does not exist. The native call (one
 * libc realpath) answers the same as the JavaScript walk, which lstat'ed each component from
 * JavaScript; several paths are resolved for every confined command and every step.
 */
function realpathOrSelf(path: string): string {
  try {
    return realpathSync.native(path)
  } catch {
    return path
  }
}

export const name = 'sandbox-policy'
export default SandboxPolicyService
