// Exit codes: a face that ends the app hands its status to the loader dsh boots, which disposes
// the tree (after `app/stopping`) and exits with it. Without that loader (an embedder's tree, a
// test), the status is left on the process for whenever it ends.
import type { Context } from 'cordis'
import type {} from '@dsh/cordis-compat/loader' // declares ctx.loader.exit(code)

/** The loader's `exit`, read now: after a signal stopped the app the disposed context has none. */
export type AppExit = (code: number) => void

/**
 * How this face ends the app with a status: `ctx.loader.exit(code)` when the loader is mounted,
 * else `process.exitCode = code`. Read the loader when called (before a run), not when exiting.
 */
export function appExit(ctx: Context): AppExit {
  const loader = ctx.get('loader')
  return (code) => {
    if (loader?.exit) loader.exit(code)
    else process.exitCode = code
  }
}

/** Exit statuses the terminal faces share. */
export const ExitCode = {
  /** The turn completed (or the command ran). */
  ok: 0,
  /** The run failed: the turn ended otherwise, an internal error. */
  failed: 1,
  /** A mistake on the command line (a usage error), before anything ran. */
  usage: 2,
  /** The reader of stdout went away (a closed pipe, 128 + SIGPIPE). */
  outputClosed: 141,
} as const
