// Booting a composition into a real Cordis tree through @cordisjs/plugin-loader, failing loud.
import { join, resolve } from 'node:path'
import { Context, Logger, type Exporter } from 'cordis'
import { type Entry, Group, Loader } from '@cordisjs/plugin-loader'
import { entryInitTask, entryOfContext, settleEntryFibers } from '@dsh/cordis-compat/loader'
import { loadPrelinked, type PrelinkDecision, type PrelinkVariant } from '@dsh/app-prelink'
import type { StopInfo } from '@dsh/brand'
import { profileDirUrl, unknownConfigKeys, type Composition, type ResolvedRow } from '@dsh/app-compose'
import { configLocation, locateFailures } from './where.ts'
import { hasUserFileRows, shareInstallModules } from './shared-modules.ts'
import { BootError, firstLine, type BootFailure } from './failures.ts'
import { checkRows, prepareRows, type LoaderError } from './rows.ts'
import { reloader, type ReloadReport } from './reload.ts'

export { BootError, formatFailure, type BootFailure, type BootFailureKind } from './failures.ts'
export type { ReloadReport } from './reload.ts'

/** What the launcher knew at boot; provided on the root context as `ctx.bootInfo`. */
export interface BootInfo {
  profile: string
  profileDir: string
  home: string
  cwd: string
  /** The app's own arguments (everything after the launcher flags); see @dsh/cmdline. */
  appArgs: readonly string[]
  /**
   * Every patch-layer file the composition was built from (bundles, the profile's, the home's,
   * each `--patch`). Their `!!js` runs at the next start, so a sandbox keeps them read-only.
   */
  layerFiles: readonly string[]
  /**
   * True while `probeComposition` mounts the tree only to check that every row comes up (`dsh
   * plugin add`): the tree is disposed right after, `app/ready` is never emitted, and a surface
   * that would start work from its apply (bind a port, open a browser) should stay passive.
   */
  probe?: boolean
}

let tsxReady: Promise<unknown> | undefined
/**
 * Workspace packages load from their transpiled dist/ (the `default` export condition), so a
 * normal boot compiles nothing. A row whose module is TypeScript (a user's own `.ts` plugin, or a
 * source checkout run with `--conditions development`) registers tsx first, once.
 */
export async function importRowModule(url: string): Promise<unknown> {
  if (/\.[mc]?tsx?$/.test(url)) {
    tsxReady ??= import('tsx/esm/api').then((tsx) => tsx.register())
    await tsxReady
  }
  return import(url)
}

declare module 'cordis' {
  interface Context {
    bootInfo: BootInfo
  }
  // `app/ready` and `app/stopping` are declared in @dsh/brand, where listeners on every floor see them.
  interface Events {
    /**
     * Emitted once every row is up, before `app/ready` (and in a probe): a row reports each
     * problem of the user's configuration it can only judge now (a settings section no loaded
     * plugin claims, a value its schema refuses) as one line; any line stops the boot (exit 1).
     */
    'app/check'(check: StartCheck): void
  }
}

export type { StopInfo }

/** What `app/check` listeners get. */
export interface StartCheck {
  report(line: string): void
  /** The installation's package.json (the cli's); its dependencies are the installed plugins. */
  installBase?: string
  home?: string
}

/** How long `dispose()` waits for `app/stopping` listeners before unwinding the rows anyway. */
export const DEFAULT_STOP_GRACE_MS = 10_000

/** Loader whose `exit(code)` asks the running app to dispose the tree and exit. */
export class DshLoader extends Loader {
  onExit?: (code: number) => void
  /** Imports a resolved row module; defaults to the native `import()`. */
  importModule: (url: string) => Promise<unknown> = importRowModule

  override exit(code = 0): void {
    this.onExit?.(code)
  }

  // Every row name is already an absolute file URL (or `cordis:`); only the importer differs.
  override import(name: string, getOuterStack: () => string[], useInternal = false): Promise<unknown> {
    if (name.startsWith('cordis:') || (useInternal && this.internal))
      return super.import(name, getOuterStack, useInternal)
    return this.importModule(name)
  }
}

export interface BootedTree {
  ctx: Context
  loader: DshLoader
  /** Resolves with the code a plugin passed to `ctx.loader.exit(code)`. */
  exited: Promise<number>
  /**
   * Stops the app (idempotent): emits `app/stopping` while the rows are still active and waits for
   * its listeners (at most `stopGraceMs`), then disposes every row; all registrations unwind.
   */
  dispose(info?: StopInfo): Promise<void>
  /**
   * Re-composes the running tree in place (hot reload): rows whose config changed restart with the
   * new config, disabled ones unload, new ones mount, removed ones unwind, and rows whose name,
   * inject or other structure changed are re-created; unchanged rows are not touched. A change
   * that does not come up (bad config, failed apply, unmet inject) is rolled back to the previous
   * rows, so the last good tree keeps serving. Reloads run one at a time.
   */
  reload(comp: Composition): Promise<ReloadReport>
}

export interface BootOptions {
  /** Root context to mount under (default: a fresh one). */
  context?: Context
  bootInfo?: Partial<BootInfo>
  /** Print Cordis log messages to stderr (also enabled by DSH_DEBUG=1). */
  debug?: boolean
  stderr?: NodeJS.WritableStream
  /**
   * Module importer for row modules (default: native `import()`, which needs tsx registered
   * for TypeScript sources). Test runners pass their own so sources go through their transform.
   */
  importModule?: (url: string) => Promise<unknown>
  /** Upper bound for the `app/stopping` phase of `dispose()` (default DEFAULT_STOP_GRACE_MS). */
  stopGraceMs?: number
  /**
   * Load the rows from the prelinked modules of this host (scripts/prelink.mjs) when they cover
   * every enabled row and are up to date; ignored when `importModule` is given. Default: off.
   */
  prelink?: PrelinkVariant
  /** The checkout whose `prelinked/<variant>` is read (default: the one this app-boot is in). */
  prelinkRoot?: string
}

const PROBE = Symbol('probe')
type InternalBootOptions = BootOptions & { [PROBE]?: boolean }

/**
 * Mounts the composition only to see whether every row comes up, then disposes it: no
 * `app/ready`, no stopping phase, `ctx.loader.exit()` ignored, `ctx.bootInfo.probe` set. Resolves
 * with every failure (unmet injects included), empty when the tree came up.
 */
export async function probeComposition(comp: Composition, opts: BootOptions = {}): Promise<BootFailure[]> {
  try {
    const tree = await bootComposition(comp, {
      ...opts,
      bootInfo: { ...opts.bootInfo, probe: true },
      [PROBE]: true,
    } as InternalBootOptions)
    await tree.dispose()
    return []
  } catch (error) {
    if (error instanceof BootError) return error.all
    throw error
  }
}

/**
 * Waits until the rows of the early prelinked files have applied (their fibers settled, failed
 * or pending on an inject); called right after the tree update starts, when every entry exists.
 */
async function settleEarly(
  loader: DshLoader,
  enabled: readonly ResolvedRow[],
  early: ReadonlySet<string>,
): Promise<void> {
  const entries = enabled
    .filter((r) => r.url && early.has(r.url))
    .map((r) => loader.store[r.row.id] as Entry | undefined)
    .filter((e): e is Entry => e !== undefined)
  await Promise.allSettled(entries.map((e) => entryInitTask(e)))
  await Promise.allSettled(entries.map((e) => e.fiber?.await()))
}

/**
 * Mounts the composed rows under a fresh root context and waits for the tree to settle. Any
 * enabled row that failed to resolve, import, validate its config or apply, or whose `inject`
 * is unmet, fails the boot: the partial tree is disposed and a BootError is thrown.
 */
export async function bootComposition(comp: Composition, opts: BootOptions = {}): Promise<BootedTree> {
  const probing = Boolean((opts as InternalBootOptions)[PROBE])
  const ctx = opts.context ?? new Context()
  const info: BootInfo = {
    profile: comp.profile.name,
    profileDir: comp.profile.dir,
    home: '',
    cwd: process.cwd(),
    appArgs: [],
    layerFiles: comp.layers.map((layer) => layer.file),
    ...opts.bootInfo,
  }
  ctx.provide('bootInfo', Object.freeze(info))

  const stderr = opts.stderr ?? process.stderr
  if (opts.debug ?? Boolean(process.env.DSH_DEBUG)) {
    const exporter: Exporter = {
      colors: false,
      levels: { default: 3 },
      export: (message) => void stderr.write(Logger.format(exporter, message) + '\n'),
    }
    ctx.logger.exporter(exporter)
  }

  // The loader reports import failures only through this event; keep them per entry.
  const errors: LoaderError[] = []
  // `internal/error` is emitted by the loader but absent from Cordis' typed event map.
  ;(ctx.on as (name: string, listener: (this: Context, error: unknown) => void) => void)(
    'internal/error',
    function (error) {
      errors.push({ entry: entryOfContext(this), error })
    },
  )
  // The loader awaits each entry fiber with a trailing `.finally()`, turning every failed
  // fiber into an unhandled rejection. We report those failures ourselves, so entry fibers
  // resolve their `await()` and keep the error (read back through `fiberError`).
  settleEntryFibers(ctx)

  const prepared = prepareRows(comp.rows, ctx)
  if (prepared.failures.length) throw new BootError(prepared.failures)
  if (hasUserFileRows(comp.rows, [comp.profile.dir])) shareInstallModules(comp.installBase)

  let loader!: DshLoader
  const host = ctx.plugin({
    name: 'dsh-app',
    apply(c: Context) {
      loader = new DshLoader(c, { baseUrl: profileDirUrl(comp.profile.dir) })
      loader.builtins.group = Group
      if (opts.importModule) loader.importModule = opts.importModule
    },
  })
  await host
  let prelinked: PrelinkDecision | undefined
  if (!opts.importModule && opts.prelink) {
    const urls = prepared.enabled.flatMap((r) => (r.url && !r.url.startsWith('cordis:') ? [r.url] : []))
    // Stacks keep their V8 code cache where Node >= 22.1 keeps its own: the directory named by
    // NODE_COMPILE_CACHE when it is set (the suite points every spawned bin at one such directory,
    // so a fresh test home does not compile the stack again), else <dsh home>/.cache/compile (the
    // dsh home, which confined commands cannot write: cached code runs). Without either, or with
    // NODE_DISABLE_COMPILE_CACHE set, none.
    const home = opts.bootInfo?.home
    const named = process.env.NODE_COMPILE_CACHE?.trim()
    const cacheDir = process.env.NODE_DISABLE_COMPILE_CACHE
      ? false
      : named
        ? resolve(named)
        : home
          ? join(home, '.cache', 'compile')
          : false
    prelinked = await loadPrelinked(urls, opts.prelink, {
      importFile: importRowModule,
      root: opts.prelinkRoot,
      cacheDir,
    })
    const importers = prelinked.importers
    if (importers)
      loader.importModule = (url) => (Object.hasOwn(importers, url) ? importers[url]() : importRowModule(url))
    if (opts.debug ?? Boolean(process.env.DSH_DEBUG)) {
      if (!importers) stderr.write(`dsh: debug: rows load file by file: ${prelinked.reason}\n`)
      else if (prelinked.stack)
        stderr.write(
          `dsh: debug: rows from prelinked stack ${prelinked.stack.id} (code cache: ${prelinked.stack.cache})\n`,
        )
    }
  }

  let disposed: Promise<void> | undefined
  // Only a tree that came up gets the stopping phase; a failed boot just unwinds.
  let ready = false
  const graceMs = opts.stopGraceMs ?? DEFAULT_STOP_GRACE_MS
  const stopping = async (info: StopInfo) => {
    if (!ready) return
    // A stack cache written at app/ready this run is written again with what ran since (a
    // one-shot's turn: request, stream, tool, session writes), which later starts would otherwise
    // compile lazily every time (one-shot instructions -5 %: .agents/notes/boot-cuts-2026-12-08.md).
    prelinked?.saveCodeCache?.()
    let timer: NodeJS.Timeout | undefined
    const grace = new Promise<void>((resolve) => (timer = setTimeout(resolve, graceMs)))
    try {
      await Promise.race([ctx.parallel('app/stopping', info), grace])
    } catch (error) {
      const errors = error instanceof AggregateError ? error.errors : [error]
      for (const e of errors) stderr.write(`dsh: warning: while stopping: ${firstLine(e)}\n`)
    } finally {
      clearTimeout(timer)
    }
    // Durable state last, while its row is still active: unwinding would close the session logs
    // from two disposers at once (the glue's and the store's), and the loser of that race resolves
    // before the winner has removed the writer lock, so a bin exiting right after the dispose
    // left `writer.lock` behind. One awaited close here removes every lock first.
    const persistence = ctx.get('sessionPersistence') as { closeAll?(): Promise<void> } | undefined
    try {
      await persistence?.closeAll?.()
    } catch (error) {
      stderr.write(`dsh: warning: while stopping: closing session logs: ${firstLine(error)}\n`)
    }
  }
  const dispose = (info: StopInfo = { reason: 'dispose', code: 0 }) =>
    (disposed ??= stopping(info)
      .then(() => host.dispose())
      .then(() => undefined))
  let exitResolve!: (code: number) => void
  const exited = new Promise<number>((resolve) => (exitResolve = resolve))
  // A row may end the app while the tree mounts (a surface that printed --help or a usage error
  // before starting its server): that exit wins, and rows left waiting on it are not failures.
  let exitDuringBoot = false
  loader.onExit = (code) => {
    if (probing) return
    exitDuringBoot = true
    exitResolve(code)
  }

  const updating = loader.root.update(prepared.rows as never)
  if (prelinked?.startRest) {
    // The early rows (already loaded) apply first; only then do the other files load, so an early
    // server listens and prints its URL before the main thread is busy compiling them.
    await settleEarly(loader, prepared.enabled, prelinked.early ?? new Set())
    prelinked.startRest()
  }
  await updating
  await loader.await()
  if (exitDuringBoot)
    return {
      ctx,
      loader,
      exited,
      dispose,
      reload: async () => ({
        ok: false,
        changed: [],
        added: [],
        removed: [],
        failures: [],
        message: 'the app is exiting',
      }),
    }

  const failures = locateFailures(checkRows(loader, prepared.enabled, errors), prepared.enabled)
  if (failures.length) {
    await dispose()
    // An unmet inject is most often a consequence of another row failing; report roots first.
    const roots = failures.filter((f) => f.kind !== 'inject')
    throw new BootError(roots.length ? roots : failures, failures)
  }
  const problems: BootFailure[] = []
  // A key the plugin's schema does not know, in a row config the user wrote (a profile, home or
  // --patch layer; the shipped bundles are tested): the schema would drop it silently.
  for (const r of prepared.enabled) {
    if (r.layers.every((label) => label.startsWith('bundle '))) continue
    const schema = (loader.store[r.row.id] as Entry | undefined)?.fiber?.runtime?.Config
    const where = comp.layers.findLast((l) => r.layers.includes(l.label))?.file
    for (const line of unknownConfigKeys(schema, r.row.config)) {
      // `config.a.b: unknown key ...`: the line of key b in the patch that wrote the config.
      const at = configLocation(r, line.slice('config.'.length, line.indexOf(':')).split('.')) ?? where
      problems.push({
        id: r.row.id,
        name: r.row.name,
        kind: 'check',
        cause: `${at ? `${at}: ` : ''}row ${r.row.id} (${r.row.name}): ${line}`,
      })
    }
  }
  ctx.emit('app/check', {
    report: (line) => void problems.push({ id: '', name: '', kind: 'check', cause: line }),
    installBase: comp.installBase,
    home: info.home,
  })
  if (problems.length) {
    await dispose()
    throw new BootError(problems)
  }
  const reload = reloader({ ctx, loader, errors, stderr, good: prepared })
  if (probing) return { ctx, loader, exited, dispose, reload }
  // Every row is active: surfaces that drive the whole tree (the headless runner, servers)
  // start from here rather than from their own apply, so they never race a sibling row.
  ready = true
  await ctx.parallel('app/ready')
  // The stack's code cache, written once nothing is left to compile for the boot (the first
  // start of this build, or after V8 refused the cache); a few ms, once. Written again when the
  // app stops (above), with the functions the run compiled after this point.
  prelinked?.saveCodeCache?.()
  return { ctx, loader, exited, dispose, reload }
}
