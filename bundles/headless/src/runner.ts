// The one-shot runner: reads the task from the app arguments, runs one agent turn in the current
// directory, prints the result to stdout and exits 0 when the turn completed, 1 otherwise.
// Nothing but the result (or the stream-json events) goes to stdout; diagnostics go to stderr.
import { readFileSync } from 'node:fs'
import { parseArgs } from 'node:util'
import type { Context } from 'cordis'
import Schema from 'schemastery'
import type { Agent, ModelSelection, TurnResult } from '@dsh/agent'
import type { Session, SessionEvent } from '@dsh/session'

export const name = 'headless-runner'
// Cordis injections are all required; the optional services (cmdlineArgs, agentDefaultModel,
// sessionPersistence, loader) are read with ctx.get() when the run starts.
export const inject = ['agents', 'llm', 'sessions']

export type OutputFormat = 'text' | 'json' | 'stream-json'
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

export const HELP = `Usage: dsh --profile headless [options] "task"

Runs one task with an agent in the current directory, prints the final answer to stdout and
exits 0 when the turn completed, 1 when it did not (the reason goes to stderr).

Options:
  --output-format FMT  text (default): the final assistant text
                       json: one JSON object {type, sessionId, result, reason, usage, turns, steps, durationMs}
                       stream-json: one JSON line per session event as it happens, then the json result
  --model [PROVIDER/]MODEL
                       model to use (default: the agent-default-model row); PROVIDER defaults to the
                       default provider
  --max-steps N        most model requests the turn may take (default: the agent-loop row)
  --permission-mode P  permission preset for this run: workspace-write (default; actions that
                       need approval are rejected, since nobody can answer) or danger-full-access
                       (never asks); also DSH_PERMISSION_MODE
  --resume ID          continue the stored session ID (needs a session-persistence row)
  --continue           continue the latest stored session of this directory
  --list-sessions      list stored sessions instead of running a task (what "dsh sessions" runs)
  -h, --help           show this help

The task "-" reads the task from standard input. A task that is one "/command" line (for
example "/compact" with --continue, or "/help") runs that command without a model turn.
Exit status: 0 completed, 1 the turn did not complete or the run failed, 2 usage error.
`

export class UsageError extends Error {}

export interface HeadlessOptions {
  task: string
  outputFormat: OutputFormat
  model?: string
  maxSteps?: number
  resume?: string
  continue: boolean
  listSessions: boolean
  permissionMode?: string
  help: boolean
}

/** Parses the app arguments. Throws UsageError with a one-line message for a mistake. */
export function parseHeadlessArgs(argv: readonly string[], readStdin: () => string = () => readFileSync(0, 'utf8')): HeadlessOptions {
  let parsed
  try {
    parsed = parseArgs({
      args: [...argv],
      allowPositionals: true,
      strict: true,
      options: {
        'output-format': { type: 'string' },
        model: { type: 'string' },
        'max-steps': { type: 'string' },
        resume: { type: 'string' },
        continue: { type: 'boolean' },
        'list-sessions': { type: 'boolean' },
        'permission-mode': { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
    })
  } catch (error) {
    const message = (error as Error).message.split('\n')[0].replace(/\. To specify a positional.*$/, '')
    throw new UsageError(`${message} (see: dsh --profile headless --help)`)
  }
  const { values, positionals } = parsed
  const help = values.help ?? false
  const outputFormat = (values['output-format'] ?? 'text') as OutputFormat
  if (!['text', 'json', 'stream-json'].includes(outputFormat)) {
    throw new UsageError(`--output-format must be text, json or stream-json, not '${outputFormat}'`)
  }
  let maxSteps: number | undefined
  if (values['max-steps'] !== undefined) {
    maxSteps = Number(values['max-steps'])
    if (!Number.isInteger(maxSteps) || maxSteps < 1) throw new UsageError(`--max-steps must be a positive integer, not '${values['max-steps']}'`)
  }
  if (values.resume !== undefined && values.continue) throw new UsageError('--resume and --continue cannot be combined')
  const listSessions = values['list-sessions'] ?? false
  let task = positionals.join(' ')
  if (listSessions) {
    if (task) throw new UsageError('dsh sessions takes no task')
    return { task: '', outputFormat, maxSteps, continue: false, listSessions, help }
  }
  if (task === '-') task = readStdin()
  if (!help && task.trim() === '') throw new UsageError('no task given: dsh --profile headless "what to do" (or "-" to read it from stdin)')
  return {
    task,
    outputFormat,
    model: values.model,
    maxSteps,
    resume: values.resume,
    continue: values.continue ?? false,
    listSessions,
    permissionMode: values['permission-mode'],
    help,
  }
}

/** Resolves `--model` against the registered routes. Throws UsageError naming what exists. */
export async function resolveModel(ctx: Context, spec: string | undefined, fallback: ModelSelection | undefined): Promise<ModelSelection> {
  if (spec === undefined) {
    if (!fallback) throw new UsageError('no model configured: pass --model PROVIDER/MODEL or add the agent-default-model row')
    return fallback
  }
  const providers = ctx.llm.listProviders()
  const slash = spec.indexOf('/')
  let provider = fallback?.provider
  let model = spec
  if (slash > 0 && providers.includes(spec.slice(0, slash))) {
    provider = spec.slice(0, slash)
    model = spec.slice(slash + 1)
  }
  if (!provider || !providers.includes(provider)) {
    throw new UsageError(`--model ${spec}: no provider route '${provider ?? '?'}'; registered: ${providers.join(', ') || '(none)'}`)
  }
  const info = await ctx.llm.resolveModelInfo(provider, model)
  if (!info) {
    const known = (await ctx.llm.listModels(provider)).map((m) => m.id)
    throw new UsageError(`--model ${spec}: provider '${provider}' has no model '${model}'; known: ${known.join(', ') || '(none)'}`)
  }
  return { ...(fallback?.provider === provider ? fallback : {}), provider, model }
}

interface Io {
  stdout: NodeJS.WritableStream
  stderr: NodeJS.WritableStream
}

/** The part of `ctx.commands` (@dsh/commands) the runner uses. */
interface CommandsLike {
  isCommandLine(text: string): boolean
  dispatch(agent: Agent, text: string): Promise<
    | { handled: false }
    | { handled: true; name: string; ok: true; output?: string }
    | { handled: true; name: string; ok: false; error: { code: string; message: string } }
  >
}

/** The part of `ctx.durableSessions` (@dsh/session-persistence) the runner uses. */
interface DurableSessionsLike {
  resume(id: string): Promise<{ session: Session; loaded: { warnings: string[] } }>
  resumeLatest(cwd: string): Promise<{ session: Session; loaded: { warnings: string[] } } | undefined>
  list(): Promise<Array<{ id: string; cwd: string; createdAt: number; title?: string; firstPrompt?: string; turns: number }>>
}

const durable = (ctx: Context) => ctx.get('durableSessions') as DurableSessionsLike | undefined

async function listSessions(ctx: Context, options: HeadlessOptions, io: Io): Promise<number> {
  const store = durable(ctx)
  if (!store) {
    io.stderr.write('dsh: listing sessions needs a session-persistence row in the profile\n')
    return 1
  }
  const sessions = await store.list()
  if (options.outputFormat !== 'text') {
    io.stdout.write(JSON.stringify(sessions) + '\n')
    return 0
  }
  if (sessions.length === 0) {
    io.stderr.write('dsh: no stored sessions\n')
    return 0
  }
  const oneLine = (text: string) => (text.length > 60 ? text.slice(0, 57) + '...' : text).replace(/\s+/g, ' ')
  io.stdout.write('ID                                    CREATED           TURNS  CWD  TITLE\n')
  for (const s of sessions) {
    const created = new Date(s.createdAt).toISOString().slice(0, 16).replace('T', ' ')
    io.stdout.write(`${s.id.padEnd(37)} ${created}  ${String(s.turns).padStart(5)}  ${s.cwd}  ${oneLine(s.title ?? s.firstPrompt ?? '')}\n`)
  }
  return 0
}

export async function runHeadless(ctx: Context, config: Config, io: Io): Promise<number> {
  let options: HeadlessOptions
  try {
    options = parseHeadlessArgs(ctx.get('cmdlineArgs')?.argv ?? [])
    if (config.task !== undefined) options.task = config.task
  } catch (error) {
    if (error instanceof UsageError) {
      io.stderr.write(`dsh: ${error.message}\n`)
      return 2
    }
    throw error
  }
  if (options.help) {
    io.stdout.write(HELP)
    return 0
  }
  if (options.listSessions) return listSessions(ctx, options, io)
  if (config.task === undefined && options.outputFormat === 'text' && config.outputFormat !== 'text') {
    options.outputFormat = config.outputFormat
  }
  const started = Date.now()
  let model: ModelSelection
  let session: Session | undefined
  try {
    model = await resolveModel(ctx, options.model, ctx.get('agentDefaultModel')?.get())
    session = await openSession(ctx, options, io)
  } catch (error) {
    if (error instanceof UsageError) {
      io.stderr.write(`dsh: ${error.message}\n`)
      return 2
    }
    io.stderr.write(`dsh: ${(error as Error).message}\n`)
    return 1
  }
  const presets = ctx.get('permissionPresets') as { names(): string[]; set(sessionId: string, name: string): void } | undefined
  if (options.permissionMode !== undefined) {
    if (!presets) {
      io.stderr.write('dsh: --permission-mode needs the permission-presets row in the profile\n')
      return 2
    }
    if (!presets.names().includes(options.permissionMode)) {
      io.stderr.write(`dsh: unknown --permission-mode '${options.permissionMode}'; valid: ${presets.names().join(', ')}\n`)
      return 2
    }
  }
  const agent: Agent = ctx.agents.create({
    cwd: process.cwd(),
    model,
    session,
    maxSteps: options.maxSteps ?? config.maxSteps,
  })
  if (options.permissionMode !== undefined) presets!.set(agent.session.id, options.permissionMode)
  const write = (line: unknown) => io.stdout.write(JSON.stringify(line) + '\n')
  let off: (() => void) | undefined
  if (options.outputFormat === 'stream-json') {
    off = agent.session.subscribe((event: SessionEvent) => write({ type: 'event', sessionId: agent.session.id, event }))
  }
  const commands = ctx.get('commands') as CommandsLike | undefined
  if (commands?.isCommandLine(options.task)) {
    // `/compact`, `/help`, ...: a human command, run without a model turn.
    try {
      const done = await commands.dispatch(agent, options.task.trim())
      if (done.handled) {
        off?.()
        if (!done.ok) {
          io.stderr.write(`dsh: ${done.error.message}\n`)
          return 1
        }
        if (options.outputFormat === 'text') {
          if (done.output) io.stdout.write(done.output.endsWith('\n') ? done.output : done.output + '\n')
        } else {
          write({ type: 'command', sessionId: agent.session.id, command: done.name, output: done.output ?? '' })
        }
        return 0
      }
    } finally {
      off?.()
    }
  }
  let result: TurnResult
  try {
    result = await agent.send(options.task)
    await agent.idle()
  } finally {
    off?.()
  }
  const turns = agent.session.events.filter((e) => e.type === 'turn/end').length
  if (options.outputFormat === 'text') {
    if (result.text) io.stdout.write(result.text.endsWith('\n') ? result.text : result.text + '\n')
  } else {
    write({
      type: 'result',
      sessionId: agent.session.id,
      result: result.text,
      reason: result.reason,
      ...(result.error ? { error: result.error } : {}),
      usage: result.usage,
      turns,
      steps: result.steps,
      durationMs: Date.now() - started,
    })
  }
  if (result.reason !== 'completed') {
    const detail = result.error ? `: ${result.error.code}: ${result.error.message}` : ''
    io.stderr.write(`dsh: the turn ended ${result.reason}${detail}\n`)
    return 1
  }
  return 0
}

async function openSession(ctx: Context, options: HeadlessOptions, io: Io): Promise<Session | undefined> {
  if (options.resume === undefined && !options.continue) return undefined
  const store = durable(ctx)
  if (!store) throw new UsageError('--resume/--continue need a session-persistence row in the profile')
  const opened = options.continue ? await store.resumeLatest(process.cwd()) : await store.resume(options.resume!)
  if (!opened) throw new UsageError(`--continue: no stored session for ${process.cwd()}`)
  for (const warning of opened.loaded.warnings) io.stderr.write(`dsh: warning: ${warning}\n`)
  return opened.session
}

export function apply(ctx: Context, config: Config): void {
  const io: Io = { stdout: process.stdout, stderr: process.stderr }
  const start = async () => {
    let code: number
    try {
      code = await runHeadless(ctx, config, io)
    } catch (error) {
      io.stderr.write(`dsh: headless run failed: ${(error as Error)?.message ?? error}\n`)
      code = 1
    }
    const loader = ctx.get('loader') as { exit?(code: number): void } | undefined
    if (loader?.exit) loader.exit(code)
    else process.exitCode = code
  }
  if (config.waitForReady) ctx.on('app/ready', () => void start())
  else void start()
}
