// @dsh/tui-app: the plugin row of the terminal UI. It owns the app command line (see
// TUI_HELP), opens the agent's session (new, -c, -r ID) once the app is ready, and runs the UI
// until the user leaves; then it asks the loader to exit. Mistakes on the command line print one
// line and exit 2 before the terminal is touched.
import type { Context } from 'cordis'
import Schema from 'schemastery'
import type { ModelSelection } from '@dsh/agent'
import type { Session } from '@dsh/session'
import type {} from '@dsh/agent-default-model'
import type {} from '@dsh/cmdline'
import type {} from '@dsh/permission-presets'
import type {} from '@dsh/session-persistence'
import { TUI_HELP, UsageError, parseTuiArgs, type TuiOptions } from './args.ts'
import { TuiApp } from './app.ts'
import { onboard } from './onboarding.ts'
import { appExit, chooseModel, ExitCode, latestContinuable, modelChoiceUsage, resumeStored } from '@dsh/surface-kit'

export { TuiApp, LOCAL_COMMANDS } from './app.ts'
export { parseTuiArgs, TUI_HELP, UsageError, type TuiOptions } from './args.ts'

export const name = 'tui-app'
export const inject = ['agents', 'llm', 'sessions']

export interface Config {
  /** Start when the app reports ready (default); false starts at once (embedding). */
  waitForReady: boolean
  /** Require a terminal on stdin and stdout (default); off only for embedding with another terminal. */
  requireTty: boolean
}

export const Config: Schema<Config> = Schema.object({
  waitForReady: Schema.boolean().default(true).description('Start when the app reports ready.'),
  requireTty: Schema.boolean().default(true).description('Refuse to start unless stdin and stdout are terminals.'),
})

async function resolveModel(ctx: Context, spec: string | undefined): Promise<ModelSelection> {
  try {
    return await chooseModel(ctx.llm, spec, ctx.get('agentDefaultModel')?.get())
  } catch (error) {
    const usage = modelChoiceUsage(error)
    throw usage !== undefined ? new UsageError(usage) : error
  }
}

async function openSession(
  ctx: Context,
  options: TuiOptions,
  cwd: string,
): Promise<{ session?: Session; warnings: string[] }> {
  if (options.resume === undefined && !options.continue) return { warnings: [] }
  const store = ctx.get('durableSessions')
  if (!store) throw new UsageError('--resume/--continue need a session-persistence row in the profile')
  let id = options.resume
  if (options.continue) {
    // The newest session of this directory that ran a turn, not a subagent's child log.
    const latest = latestContinuable(await store.list(), cwd)
    if (!latest) throw new UsageError(`--continue: no stored session for ${cwd}`)
    id = latest.id
  }
  const opened = await resumeStored(store, id!)
  return { session: opened.session, warnings: opened.loaded.warnings }
}

/** Writes the sequences that undo what the UI turned on; used when the process ends without a clean stop. */
function restoreTerminal(): void {
  try {
    // Bracketed paste off, kitty keyboard flags popped, modifyOtherKeys off, sync output ended, cursor shown.
    process.stdout.write('\x1b[?2004l\x1b[<u\x1b[>4;0m\x1b[?2026l\x1b[?25h')
    if (process.stdin.isTTY && process.stdin.isRaw) process.stdin.setRawMode(false)
  } catch {
    // The terminal is gone; nothing to restore.
  }
}

export async function runTui(ctx: Context, config: Config, exit: (code: number) => void): Promise<void> {
  const fail = (code: number, message: string) => {
    process.stderr.write(`dsh: ${message}\n`)
    exit(code)
  }
  let options: TuiOptions
  try {
    options = parseTuiArgs(ctx.get('cmdlineArgs')?.argv ?? [])
  } catch (error) {
    if (error instanceof UsageError) return fail(ExitCode.usage, error.message)
    throw error
  }
  if (options.help) {
    process.stdout.write(TUI_HELP)
    return exit(ExitCode.ok)
  }
  if (config.requireTty && !(process.stdin.isTTY && process.stdout.isTTY)) {
    return fail(
      ExitCode.usage,
      'the terminal UI needs an interactive terminal on stdin and stdout; for a one-shot run use: dsh -p "task"',
    )
  }
  const cwd = process.cwd()
  // First run without any model key: ask for one before the UI takes the terminal.
  const onboarded = await onboard(ctx, { input: process.stdin, output: process.stdout, env: process.env })
  if (onboarded === false)
    return fail(
      ExitCode.failed,
      'no model API key was set up; run dsh again, or export DEEPSEEK_API_KEY=... (see dsh doctor)',
    )
  let model: ModelSelection
  let opened: { session?: Session; warnings: string[] }
  try {
    model = await resolveModel(ctx, options.model)
    // A key set up for another provider than the default model's: start on that provider's first model.
    if (onboarded && options.model === undefined && model.provider !== onboarded) {
      const first = (await ctx.llm.listModels(onboarded))[0]
      if (first) model = { provider: onboarded, model: first.id }
    }
    const presets = ctx.get('permissionPresets')
    if (options.permissionMode !== undefined) {
      if (!presets) throw new UsageError('--permission-mode needs the permission-presets row in the profile')
      if (!presets.names().includes(options.permissionMode)) {
        throw new UsageError(
          `unknown --permission-mode '${options.permissionMode}'; valid: ${presets.names().join(', ')}`,
        )
      }
    }
    opened = await openSession(ctx, options, cwd)
    // A reopened session continues on the model last picked in it (`/model`), unless --model says otherwise.
    if (options.model === undefined && opened.session)
      model = ctx.get('agentDefaultModel')?.ofSession(opened.session) ?? model
  } catch (error) {
    return fail(error instanceof UsageError ? ExitCode.usage : ExitCode.failed, (error as Error).message)
  }
  const agent = ctx.agents.create({ cwd, model, ...(opened.session ? { session: opened.session } : {}) })
  if (options.permissionMode !== undefined) ctx.get('permissionPresets')!.set(agent.session.id, options.permissionMode)

  let app: TuiApp | undefined
  let left = false
  // How to come back to the session shown last, when it holds a turn and is stored: decided while
  // the tree still runs (the session is closed while the app stops), printed once the UI is gone.
  let resumeHint: string | undefined
  const noteResume = () => {
    if (!app || resumeHint !== undefined) return
    const session = app.session
    const stored = ctx.get('durableSessions')?.isPersisted(session.id)
    resumeHint =
      stored && session.events.some((event) => event.type === 'turn/start')
        ? `dsh: to resume this session: dsh -r ${session.id}\n`
        : ''
  }
  const leave = (code: number) => {
    if (left) return
    left = true
    noteResume()
    exit(code)
  }
  ctx.on('app/stopping', noteResume)
  app = new TuiApp(ctx, { agent, cwd, onExit: leave })
  process.once('exit', restoreTerminal)
  // Unloading the row (signal, loader exit, an embedder's dispose) stops the UI and restores the terminal.
  ctx.effect(
    () => () => {
      app?.stop()
      process.off('exit', restoreTerminal)
      if (resumeHint) process.stderr.write(resumeHint)
    },
    'tui: restore the terminal',
  )
  app.start()
  for (const warning of opened.warnings) app.notice(`warning: ${warning}`)
  if (options.resumePick) await app.pickSession()
  if (options.prompt.trim()) void app.submit(options.prompt)
}

export function apply(ctx: Context, config: Config): void {
  const start = () => {
    // The loader is read when the UI starts: after a signal stopped the app, the disposed context
    // no longer has it (and the signal's status stands).
    const exit = appExit(ctx)
    return runTui(ctx, config, exit).catch((error: unknown) => {
      restoreTerminal()
      process.stderr.write(`dsh: the terminal UI failed: ${(error as Error)?.stack ?? error}\n`)
      exit(ExitCode.failed)
    })
  }
  if (config.waitForReady) ctx.on('app/ready', () => void start())
  else void start()
}
