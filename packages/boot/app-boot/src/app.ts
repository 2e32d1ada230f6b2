// The whole launch after the launcher parsed its flags: env layering, profile creation,
// composition, then either `--dump-config` or boot, run and graceful shutdown.
import { resolveDshHome } from '@dsh/home-paths'
import { bootComposition, type BootedTree, type StopInfo } from './boot.ts'
import { applyDotEnv } from './env.ts'
import { composeProfile, DshUserError, dumpComposition, ensureProfile } from '@dsh/app-compose'
import { watchLayers, type WatchOptions } from './watch.ts'
import { homeLayout } from '@dsh/home-paths'
import { join, resolve } from 'node:path'

export interface RunOptions {
  profile: string
  patches?: string[]
  dumpConfig?: boolean
  appArgs?: string[]
  /** A file inside the dsh installation that bundles and bare row names fall back to (the cli's package.json). */
  installBase: string
  /** Directory holding the profile templates copied on first use. */
  templatesDir: string
  env?: NodeJS.ProcessEnv
  cwd?: string
  stdout?: NodeJS.WritableStream
  stderr?: NodeJS.WritableStream
  /** Install SIGINT/SIGTERM handlers (default true). */
  handleSignals?: boolean
}

/** Exit status per handled signal: 128 + the signal number, as shells report it. */
export const SIGNAL_EXIT_CODES: Readonly<Record<'SIGINT' | 'SIGTERM' | 'SIGHUP', number>> = {
  SIGINT: 130,
  SIGTERM: 143,
  SIGHUP: 129,
}

export interface RunTreeOptions {
  /** Program name prefixing the lines this prints (`dsh`, `dsh-acp`, `dsh-jsonrpc-agent`). */
  name: string
  stderr?: NodeJS.WritableStream
  /** Install SIGINT/SIGTERM/SIGHUP handlers (default true). */
  handleSignals?: boolean
  /** Stop with 0 when nothing keeps the event loop alive (a finished one-shot; default false). */
  exitWhenIdle?: boolean
  /** What a second signal during shutdown does (default: `process.exit(code)`). */
  forceExit?: (code: number) => void
  /**
   * Hot reload (long-lived hosts only): after the boot, edits of these files re-compose the running
   * tree through `BootedTree.reload`; each outcome is one line on `stderr`.
   */
  watch?: Pick<WatchOptions, 'files' | 'recompose' | 'debounceMs'>
}

/**
 * The one lifecycle every dsh bin shares: boot, run until a signal, `ctx.loader.exit(code)` or
 * (optionally) an idle event loop, then stop gracefully (`app/stopping`, then dispose) and resolve
 * with the exit status: the loader's code, or 128 + signal number. Handlers are installed before
 * the boot, so a signal while mounting still unwinds the tree. A second signal while stopping
 * prints one line and calls `forceExit` at once.
 */
export async function runTree(boot: () => Promise<BootedTree>, opts: RunTreeOptions): Promise<number> {
  const stderr = opts.stderr ?? process.stderr
  const forceExit = opts.forceExit ?? ((code: number) => process.exit(code))
  let stop: StopInfo | undefined
  let wake!: () => void
  const stopped = new Promise<void>((resolve) => (wake = resolve))
  const request = (info: StopInfo) => {
    if (stop) return
    stop = info
    wake()
  }
  const cleanups: (() => void)[] = []
  if (opts.handleSignals ?? true) {
    for (const [signal, code] of Object.entries(SIGNAL_EXIT_CODES) as [NodeJS.Signals, number][]) {
      const handler = () => {
        if (!stop) return request({ reason: 'signal', signal, code })
        stderr.write(`${opts.name}: ${signal} again while stopping; exiting now\n`)
        forceExit(stop.code)
      }
      process.on(signal, handler)
      cleanups.push(() => process.off(signal, handler))
    }
  }
  try {
    const tree = await boot()
    if (opts.watch?.files.length) {
      // catchUp: an edit saved while the tree was booting is applied too.
      const watcher = watchLayers(tree, {
        ...opts.watch,
        name: opts.name,
        catchUp: true,
        report: (line) => void stderr.write(line + '\n'),
      })
      cleanups.push(() => watcher.close())
    }
    if (opts.exitWhenIdle) {
      const idle = () => request({ reason: 'idle', code: 0 })
      process.once('beforeExit', idle)
      cleanups.push(() => process.off('beforeExit', idle))
    }
    void tree.exited.then((code) => request({ reason: 'exit', code }))
    await stopped
    await tree.dispose(stop)
    return stop!.code
  } finally {
    for (const c of cleanups) c()
  }
}

/**
 * Runs dsh and resolves with the exit status. User mistakes (bad profile, bad layer, failed
 * boot) are printed as single `dsh: ...` lines and resolve 1 or 2; only bugs reject.
 */
export async function runApp(opts: RunOptions): Promise<number> {
  const env = opts.env ?? process.env
  const cwd = opts.cwd ?? process.cwd()
  const stdout = opts.stdout ?? process.stdout
  const stderr = opts.stderr ?? process.stderr
  try {
    const home = resolveDshHome(env)
    applyDotEnv({ env, cwd, home })
    const { dir } = ensureProfile(home, opts.profile, opts.templatesDir)
    const composeOpts = {
      home,
      profileName: opts.profile,
      profileDir: dir,
      patches: opts.patches,
      installBase: opts.installBase,
      cwd,
    }
    const comp = composeProfile(composeOpts)
    for (const w of comp.warnings) stderr.write(`dsh: warning: ${w}\n`)
    if (opts.dumpConfig) {
      stdout.write(dumpComposition(comp))
      return 0
    }
    return await runTree(
      () => bootComposition(comp, { bootInfo: { home, cwd, appArgs: opts.appArgs ?? [] }, stderr, prelink: 'dsh' }),
      {
        name: 'dsh',
        stderr,
        handleSignals: opts.handleSignals,
        exitWhenIdle: true,
        // Profiles that serve (web, tui) opt in with `dsh.profile.hotReload`; a one-shot never reloads.
        watch: comp.hotReload
          ? {
              files: [
                join(dir, 'cordis.patch.yml'),
                join(dir, 'package.json'),
                homeLayout(home).patch,
                ...(opts.patches ?? []).map((p) => resolve(cwd, p)),
              ],
              recompose: () => composeProfile(composeOpts),
            }
          : undefined,
      },
    )
  } catch (error) {
    if (error instanceof DshUserError) {
      const msg = error.message.startsWith('dsh: ') ? error.message : `dsh: ${error.message}`
      stderr.write(msg + '\n')
      return error.exitCode
    }
    throw error
  }
}
