// The whole launch after the launcher parsed its flags: env layering, profile creation,
// composition, then either `--dump-config` or boot, run and graceful shutdown.
import { resolveDshHome } from '@dsh/home-paths'
import { bootComposition } from './boot.ts'
import { dumpComposition } from './dump.ts'
import { applyDotEnv } from './env.ts'
import { DshUserError } from './errors.ts'
import { composeProfile, ensureProfile } from './profile.ts'

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

const SIGNAL_CODES: Record<string, number> = { SIGINT: 130, SIGTERM: 143 }

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
    const comp = composeProfile({ home, profileName: opts.profile, profileDir: dir, patches: opts.patches, installBase: opts.installBase, cwd })
    for (const w of comp.warnings) stderr.write(`dsh: warning: ${w}\n`)
    if (opts.dumpConfig) {
      stdout.write(dumpComposition(comp))
      return 0
    }
    // Signal handlers go in before the boot so a signal during mounting still unwinds the tree.
    let finish!: (code: number) => void
    const stop = new Promise<number>((resolve) => (finish = resolve))
    const cleanups: (() => void)[] = []
    if (opts.handleSignals ?? true) {
      for (const signal of Object.keys(SIGNAL_CODES)) {
        const handler = () => finish(SIGNAL_CODES[signal])
        process.once(signal, handler)
        cleanups.push(() => process.off(signal, handler))
      }
    }
    let tree
    try {
      tree = await bootComposition(comp, { bootInfo: { home, cwd, appArgs: opts.appArgs ?? [] }, stderr })
    } catch (error) {
      for (const c of cleanups) c()
      throw error
    }
    // Nothing left to do (no server, no pending work): unwind the tree and exit 0.
    const idle = () => finish(0)
    process.once('beforeExit', idle)
    cleanups.push(() => process.off('beforeExit', idle))
    void tree.exited.then(finish)
    const code = await stop
    for (const c of cleanups) c()
    await tree.dispose()
    return code
  } catch (error) {
    if (error instanceof DshUserError) {
      const msg = error.message.startsWith('dsh: ') ? error.message : `dsh: ${error.message}`
      stderr.write(msg + '\n')
      return error.exitCode
    }
    throw error
  }
}
