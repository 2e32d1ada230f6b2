// @ts-check
// The one launcher every dsh bin ends in (`dsh`, `dsh-acp`, `dsh-jsonrpc-agent`, `dsh-mcp`), so
// their start-up and exit behaviour cannot drift apart. Plain ESM with node: imports only: it runs
// before any workspace package is loaded, and it decides whether those come from dist/ or src/.
//  - DSH_DEV=1 re-runs the bin on the TypeScript sources (tsx, `development` export condition).
//  - Node >= 22.1 keeps compiled module code under <dsh home>/.cache/compile (nothing on Node 20;
//    NODE_DISABLE_COMPILE_CACHE=1 turns it off). It lives in the dsh home, which confined commands
//    cannot write, since cached code is executed.
//  - The run's exit code becomes the process's. Once the app is disposed and stdout/stderr are
//    flushed the process exits at once (no heap teardown); under DSH_DEBUG the event loop may
//    drain instead, so a handle a plugin leaked shows: forced exit 2 s later with a line naming
//    what was still open. A crash of the launcher itself is one line on stderr and exit 70.
import { homedir } from 'node:os'
import { join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'

/** `$DSH_HOME` as @dsh/home-paths resolves it (read here before any package is loaded). */
export function dshHome(env = process.env) {
  const raw = env.DSH_HOME?.trim()
  if (!raw) return join(homedir(), '.dsh')
  if (raw === '~') return homedir()
  if (raw.startsWith('~/')) return join(homedir(), raw.slice(2))
  return resolve(raw)
}

/** True when this process already runs the sources (`--conditions=development`). */
export const runsSources = () => process.execArgv.some((a) => a.includes('development'))

/**
 * Re-runs `bin` on the TypeScript sources when DSH_DEV is set and this process does not yet; the
 * process then exits with the child's status (this call never returns in that case).
 * @param {string | URL} bin the bin file (`import.meta.url` of the caller)
 * @param {readonly string[]} argv the bin's arguments
 */
export async function respawnOnSourcesIfDev(bin, argv) {
  if (!process.env.DSH_DEV || runsSources()) return
  const { spawnSync } = await import('node:child_process')
  const file = typeof bin === 'string' && !bin.startsWith('file:') ? bin : fileURLToPath(bin)
  // tsx resolved from here (app-boot depends on it), not from the working directory, which may be
  // any project.
  const tsx = import.meta.resolve('tsx')
  const r = spawnSync(
    process.execPath,
    ['--conditions=development', '--import', tsx, ...process.execArgv, file, ...argv],
    { stdio: 'inherit' },
  )
  process.exit(r.status ?? 1)
}

/** Turns on Node's on-disk compile cache when this Node has one. */
export async function enableCompileCache() {
  /** @type {{ enableCompileCache?: (dir: string) => unknown }} */
  const nodeModule = await import('node:module')
  nodeModule.enableCompileCache?.(join(dshHome(), '.cache', 'compile'))
}

/**
 * A reader that goes away early (`dsh-plugin list | head -1`) is the normal end of a pipe, not a
 * crash: without a listener, EPIPE on stdout (or on stderr under `2>&1`) is an unhandled 'error'
 * event, a stack trace and exit 1. Output to a closed pipe is dropped; another stdout error is one
 * line. Nothing is added when the bin installed its own listener first (dsh, dsh-jsonrpc-agent).
 * @param {string} name
 */
export function quietClosedPipes(name) {
  if (process.stdout.listenerCount('error') === 0) {
    process.stdout.on('error', (/** @type {NodeJS.ErrnoException} */ error) => {
      if (error.code !== 'EPIPE') process.stderr.write(`${name}: cannot write to stdout: ${error.message}\n`)
    })
  }
  if (process.stderr.listenerCount('error') === 0) process.stderr.on('error', () => {})
}

/**
 * Starts a bin: DSH_DEV respawn, compile cache, then `run()`; its resolved number is the exit code.
 * @param {{ name: string, bin: string | URL, argv: readonly string[], run: () => Promise<number> }} spec
 *   `name` prefixes the internal-error line; `run` imports what it needs (dist/ or, under DSH_DEV,
 *   the sources; see `runsSources()`) and runs it.
 */
export async function launch(spec) {
  quietClosedPipes(spec.name)
  await respawnOnSourcesIfDev(spec.bin, spec.argv)
  await enableCompileCache()
  let code
  try {
    code = await spec.run()
  } catch (error) {
    process.stderr.write(`${spec.name}: internal error: ${/** @type {Error} */ (error)?.stack ?? error}\n`)
    process.exit(70)
  }
  process.exitCode = code
  // Whatever is still open now was left by a plugin (the tree is disposed): the process exits
  // 2 s later at the latest. Under DSH_DEBUG the event loop may drain, and a line names what
  // kept it open.
  setTimeout(() => {
    if (process.env.DSH_DEBUG) {
      const open = process.getActiveResourcesInfo().filter((kind) => kind !== 'Timeout')
      process.stderr.write(
        `${spec.name}: debug: forced exit: still running 2 s after the app ended (open: ${open.join(', ') || 'nothing named'})\n`,
      )
    }
    process.exit(code)
  }, 2000).unref()
  if (process.env.DSH_DEBUG) return
  // Otherwise exit as soon as stdout and stderr are flushed: when the loop drains by itself, Node
  // then tears down the whole heap page by page before the process ends, which took longer than
  // the tree's dispose (see .agents/notes/exit-after-dispose.md); exit() leaves that to the kernel.
  await Promise.all([flushed(process.stdout), flushed(process.stderr)])
  process.exit(code)
}

/**
 * Resolves once what was written to `stream` so far is handed to the OS (an empty write's
 * callback runs after the writes queued before it); at once for a stream that is closed or gone.
 * @param {NodeJS.WriteStream} stream
 */
function flushed(stream) {
  return new Promise((resolve) => {
    if (!stream.writable || stream.destroyed) return resolve(undefined)
    try {
      stream.write('', () => resolve(undefined))
    } catch {
      resolve(undefined)
    }
  })
}
