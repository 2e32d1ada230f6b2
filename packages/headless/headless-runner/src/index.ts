// The one-shot runner: reads the task from the app arguments, runs one agent turn in the current
// directory, prints the result to stdout and exits 0 when the turn completed, 1 otherwise.
// Nothing but the result (or the stream-json events) goes to stdout; diagnostics go to stderr.
import type { Context } from 'cordis'
import Schema from 'schemastery'
import type { OutputFormat } from './args.ts'
import { abandonStdinRead } from './stdin.ts'
import { appExit, ExitCode } from '@dsh/surface-kit'
import type { Io } from './io.ts'
import { runHeadless } from './run.ts'

export const name = 'headless-runner'
// Cordis injections are all required; the optional services (cmdlineArgs, agentDefaultModel,
// sessionPersistence, loader) are read with ctx.get() when the run starts.
export const inject = ['agents', 'llm', 'sessions']

export interface Config {
  /** Overrides the task from the command line. */
  task?: string
  outputFormat: OutputFormat
  maxSteps?: number
  /** Start when the app reports ready (default); false starts at once (for embedding in tests). */
  waitForReady: boolean
}

export const Config: Schema<Config> = Schema.object({
  task: Schema.string().description('Task text; default: the positional app arguments.'),
  outputFormat: Schema.union(['text', 'json', 'stream-json'] as const).default('text'),
  maxSteps: Schema.natural().min(1),
  waitForReady: Schema.boolean().default(true),
})

export { HELP } from './help.ts'
export { UsageError, parseHeadlessArgs, type HeadlessOptions, type OutputFormat } from './args.ts'
export { STDIN_GRACE_MS, completeTask, readPipedStdin } from './stdin.ts'
export type { Io } from './io.ts'
export { formatAge, sessionTable } from '@dsh/surface-kit'
export type { SessionRow } from './sessions.ts'
export { isUnreachable, toolTitle } from './observe.ts'
export { resolveModel, runHeadless } from './run.ts'

export function apply(ctx: Context, config: Config): void {
  // An error on stdout (EPIPE: the reader of a pipe went away) would otherwise be an unhandled
  // 'error' event: a stack trace and exit 1 in the middle of the run.
  const gone = new AbortController()
  const onStdoutError = (error: Error) => gone.abort(error)
  ctx.effect(() => {
    process.stdout.on('error', onStdoutError)
    return () => void process.stdout.off('error', onStdoutError)
  })
  const io: Io = { stdout: process.stdout, stderr: process.stderr, outputGone: gone.signal }
  const start = async () => {
    // The loader is read before the run: after a signal stopped the app, the disposed context no
    // longer has it (and the signal's status stands).
    const exit = appExit(ctx)
    let code: number
    try {
      code = await runHeadless(ctx, config, io)
    } catch (error) {
      io.stderr.write(`dsh: headless run failed: ${(error as Error)?.message ?? error}\n`)
      code = ExitCode.failed
    }
    // The result's write may fail only after the run returned: wait until stdout took it.
    await new Promise<void>((resolve) => {
      if (gone.signal.aborted) return resolve()
      io.stdout.write('', () => resolve())
    })
    // A reader that left is the pipe's normal end (141); any other stdout failure is a failure (1).
    if (gone.signal.aborted)
      code = (gone.signal.reason as NodeJS.ErrnoException)?.code === 'EPIPE' ? ExitCode.outputClosed : ExitCode.failed
    exit(code)
  }
  if (config.waitForReady) ctx.on('app/ready', () => void start())
  else void start()
  ctx.on('app/stopping', () => abandonStdinRead())
}
