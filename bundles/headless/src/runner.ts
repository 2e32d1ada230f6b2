// The one-shot runner: reads the task from the app arguments, runs one agent turn in the current
// directory, prints the result to stdout and exits 0 when the turn completed, 1 otherwise.
// Nothing but the result (or the stream-json events) goes to stdout; diagnostics go to stderr.
import { fstatSync, readFileSync, type Stats } from 'node:fs'
import { parseArgs } from 'node:util'
import type { Context } from 'cordis'
import Schema from 'schemastery'
import type { Agent, ModelSelection, RequestErrorDecision, RequestErrorPayload, TurnResult } from '@dsh/agent'
import type { Session, SessionEvent } from '@dsh/session'
import type { TokenUsage } from '@dsh/llm'
import { splitOptionalValues } from '@dsh/cmdline'
import { HELP } from './help.ts'
import { chooseModel, modelChoiceUsage } from '@dsh/surface-kit'
// Type-only: the `declare module 'cordis'` blocks that type `ctx.get('commands' | 'durableSessions' |
// 'permissionPresets')`; each row is optional in a profile, so each lookup may be undefined.
import type {} from '@dsh/commands'
import type {} from '@dsh/session-persistence'
import type {} from '@dsh/permission-presets'
import type {} from '@dsh/agent-presets'

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

export { HELP } from './help.ts'

export class UsageError extends Error {}

export interface HeadlessOptions {
  /** The positional arguments joined by spaces ('' when none; '-' means: read it from stdin). */
  task: string
  outputFormat: OutputFormat
  model?: string
  maxSteps?: number
  resume?: string
  /** `-r`/`--resume` without an id: list this directory's sessions and ask for one. */
  resumePick: boolean
  continue: boolean
  listSessions: boolean
  /** With listSessions: every stored session, not only this directory's. */
  all: boolean
  permissionMode?: string
  /** `--preset NAME`: the agent preset a new session is composed from. */
  preset?: string
  help: boolean
}

/** `-r`/`--resume` take an optional id: bare, they open the newest/picker (see splitOptionalValues). */
function splitOptionalResume(argv: readonly string[]): { args: string[]; pick: boolean } {
  const { args, bare } = splitOptionalValues(argv, [{ long: 'resume', short: 'r' }])
  return { args, pick: bare.has('resume') }
}

/**
 * Parses the app arguments. Throws UsageError with a one-line message for a mistake. The task
 * may be empty here: stdin can still supply it (`completeTask`).
 */
export function parseHeadlessArgs(argv: readonly string[]): HeadlessOptions {
  const { args, pick } = splitOptionalResume(argv)
  const parse = () =>
    parseArgs({
      args,
      allowPositionals: true,
      strict: true,
      options: {
        print: { type: 'boolean', short: 'p' },
        'output-format': { type: 'string' },
        model: { type: 'string' },
        'max-steps': { type: 'string' },
        resume: { type: 'string', short: 'r' },
        continue: { type: 'boolean', short: 'c' },
        'list-sessions': { type: 'boolean' },
        all: { type: 'boolean' },
        'permission-mode': { type: 'string' },
        preset: { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
    })
  let parsed: ReturnType<typeof parse>
  try {
    parsed = parse()
  } catch (error) {
    const message = (error as Error).message.split('\n')[0].replace(/\. To specify a positional.*$/, '')
    throw new UsageError(`${message} (see: dsh -p --help)`)
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
    if (!Number.isInteger(maxSteps) || maxSteps < 1)
      throw new UsageError(`--max-steps must be a positive integer, not '${values['max-steps']}'`)
  }
  const resumePick = pick || values.resume === ''
  const resume = values.resume === '' ? undefined : values.resume
  if ((resume !== undefined || resumePick) && values.continue)
    throw new UsageError('--resume and --continue cannot be combined')
  const listSessions = values['list-sessions'] ?? false
  const all = values.all ?? false
  if (all && !listSessions) throw new UsageError('--all only applies to "dsh sessions"')
  const task = positionals.join(' ')
  if (listSessions && task) throw new UsageError('dsh sessions takes no task')
  return {
    task: listSessions ? '' : task,
    outputFormat,
    model: values.model,
    maxSteps,
    resume,
    resumePick,
    continue: values.continue ?? false,
    listSessions,
    all,
    permissionMode: values['permission-mode'],
    preset: values.preset,
    help,
  }
}

/** How long a task-given run waits for the first byte of a non-terminal stdin before ignoring it. */
export const STDIN_GRACE_MS = 3000

/**
 * Reads stdin when it is not a terminal. `untilEnd`: wait for EOF however long it takes (stdin
 * is the task); otherwise a pipe that sends nothing within `graceMs` is ignored (a parent that
 * spawned us with an open stdin it never writes). Undefined when there is nothing to read.
 */
/** Ends a stdin read still waiting (set while one is): the app is stopping. */
let abandonRead: (() => void) | undefined
/** Set when a stop abandoned the read: the empty task it leaves is not a usage error to report. */
let readAbandoned = false

export async function readPipedStdin(
  untilEnd: boolean,
  graceMs = STDIN_GRACE_MS,
  explicit = false,
): Promise<string | undefined> {
  readAbandoned = false
  const stdin = process.stdin
  // A terminal is read only when asked for by name (the task "-"): type it, then end with ^D.
  if (stdin.isTTY) return explicit ? readFileSync(0, 'utf8') : undefined
  let stat: Stats
  try {
    stat = fstatSync(0)
  } catch {
    return undefined // stdin closed
  }
  if (stat.isFile()) return readFileSync(0, 'utf8')
  if (stat.isCharacterDevice()) return undefined // /dev/null and friends
  return new Promise((resolve) => {
    let text = ''
    let timer: NodeJS.Timeout | undefined
    const finish = (value: string | undefined) => {
      if (timer) clearTimeout(timer)
      abandonRead = undefined
      stdin.off('data', onData).off('end', onEnd).off('error', onError)
      stdin.pause()
      if (value === undefined) stdin.destroy()
      resolve(value)
    }
    const onData = (chunk: string) => {
      text += chunk
      if (timer) {
        clearTimeout(timer)
        timer = undefined
      }
    }
    const onEnd = () => finish(text)
    const onError = () => finish(text || undefined)
    stdin.setEncoding('utf8').on('data', onData).on('end', onEnd).on('error', onError)
    if (!untilEnd) timer = setTimeout(() => finish(undefined), graceMs)
    // A signal while waiting for a piped task: the open pipe must not keep the process up.
    abandonRead = () => {
      readAbandoned = true
      finish(undefined)
    }
  })
}

/**
 * The final task: `-` is replaced by stdin; a missing task is read from a piped stdin; piped
 * stdin next to a task is appended to it after a blank line. Throws UsageError when it is empty.
 */
export async function completeTask(
  task: string,
  read: (untilEnd: boolean, explicit: boolean) => Promise<string | undefined> = (untilEnd, explicit) =>
    readPipedStdin(untilEnd, STDIN_GRACE_MS, explicit),
): Promise<string> {
  let full = task
  if (task === '-' || task === '') {
    full = (await read(true, task === '-')) ?? ''
  } else {
    const piped = await read(false, false)
    if (piped !== undefined && piped.trim() !== '') full = `${task}\n\n${piped.replace(/\s+$/, '')}`
  }
  if (full.trim() === '') throw new UsageError('no task given: dsh -p "what to do" (or pipe it on stdin)')
  return full
}

/** Resolves `--model` against the registered routes. Throws UsageError naming what exists. */
export async function resolveModel(
  ctx: Context,
  spec: string | undefined,
  fallback: ModelSelection | undefined,
): Promise<ModelSelection> {
  try {
    return await chooseModel(ctx.llm, spec, fallback)
  } catch (error) {
    const usage = modelChoiceUsage(error)
    throw usage !== undefined ? new UsageError(usage) : error
  }
}

interface Io {
  stdout: NodeJS.WritableStream
  stderr: NodeJS.WritableStream
  /**
   * Aborted (with the stream's error) once stdout cannot take more output: its reader went away
   * (`dsh -p ... | head -1`). The run then stops its turn, writes nothing more and exits
   * {@link EXIT_OUTPUT_CLOSED}.
   */
  outputGone?: AbortSignal
}

/** Exit status of a run whose stdout reader went away: 128 + SIGPIPE, as shells report a program a closed pipe ended. */
export const EXIT_OUTPUT_CLOSED = 141

interface SessionRow {
  id: string
  cwd: string
  createdAt: number
  updatedAt?: number
  title?: string
  firstPrompt?: string
  turns: number
  damaged?: string
  parentSession?: { sessionId: string }
}

const durable = (ctx: Context) => ctx.get('durableSessions')

/**
 * A session worth offering to continue: it ran a turn, or it is damaged (so `--continue` names
 * it instead of silently skipping to an older one). A session that only ran a command such as
 * `/help` has no turn and is left out, and so is one derived from another session (a subagent's
 * child log names its parent): `--resume ID` still opens those.
 */
const continuable = (row: SessionRow) => (row.turns > 0 || row.damaged !== undefined) && row.parentSession === undefined

/** "just now", "5m ago", "3h ago", "2d ago". */
export function formatAge(then: number, now = Date.now()): string {
  const s = Math.max(0, Math.round((now - then) / 1000))
  if (s < 60) return 'just now'
  if (s < 3600) return `${Math.floor(s / 60)}m ago`
  if (s < 86_400) return `${Math.floor(s / 3600)}h ago`
  return `${Math.floor(s / 86_400)}d ago`
}

/** An aligned table: every column but the last padded to its widest cell. */
export function sessionTable(rows: SessionRow[], withCwd: boolean, now = Date.now()): string {
  const oneLine = (text: string) => {
    const flat = text.replace(/\s+/g, ' ').trim()
    return flat.length > 60 ? flat.slice(0, 57) + '...' : flat
  }
  const header = ['ID', 'UPDATED', 'TURNS', ...(withCwd ? ['CWD'] : []), 'TITLE']
  const cells = rows.map((r) => [
    r.id,
    formatAge(r.updatedAt ?? r.createdAt, now),
    String(r.turns),
    ...(withCwd ? [r.cwd] : []),
    r.damaged !== undefined
      ? `(damaged: ${oneLine(r.damaged)})`
      : oneLine(r.title ?? r.firstPrompt ?? '') || '(no prompt)',
  ])
  const all = [header, ...cells]
  const widths = header.map((_, i) => Math.max(...all.map((row) => row[i].length)))
  return (
    all
      .map((row) =>
        row
          .map((cell, i) => (i === row.length - 1 ? cell : i === 2 ? cell.padStart(widths[i]) : cell.padEnd(widths[i])))
          .join('  '),
      )
      .join('\n') + '\n'
  )
}

async function listSessions(ctx: Context, options: HeadlessOptions, io: Io): Promise<number> {
  const store = durable(ctx)
  if (!store) {
    io.stderr.write('dsh: listing sessions needs a session-persistence row in the profile\n')
    return 1
  }
  const cwd = process.cwd()
  const sessions = (await store.list()).filter((row) => options.all || (row.cwd === cwd && continuable(row)))
  if (options.outputFormat !== 'text') {
    io.stdout.write(JSON.stringify(sessions) + '\n')
    return 0
  }
  if (sessions.length === 0) {
    io.stderr.write(
      options.all
        ? 'dsh: no stored sessions\n'
        : `dsh: no stored sessions for ${cwd} (dsh sessions --all lists every one)\n`,
    )
    return 0
  }
  io.stdout.write(sessionTable(sessions, options.all))
  return 0
}

/** `-r` without an id: this directory's recent sessions on stderr, and exit 2 asking for one. */
async function pickSession(ctx: Context, io: Io): Promise<number> {
  const store = durable(ctx)
  if (!store) {
    io.stderr.write('dsh: --resume needs a session-persistence row in the profile\n')
    return 2
  }
  const cwd = process.cwd()
  const recent = (await store.list()).filter((row) => row.cwd === cwd && continuable(row)).slice(0, 10)
  if (recent.length === 0) {
    io.stderr.write(
      `dsh: --resume needs a session id, and there is no stored session for ${cwd} (dsh sessions --all lists every one)\n`,
    )
    return 2
  }
  io.stderr.write(
    `dsh: --resume needs a session id; recent sessions here:\n${sessionTable(recent, false)}dsh: run again with: dsh -r ID "task"\n`,
  )
  return 2
}

const UNREACHABLE = /\b(ECONNREFUSED|ENOTFOUND|EAI_AGAIN|EHOSTUNREACH|ENETUNREACH)\b/

/** Whether a request failed because the configured endpoint cannot be reached at all. */
export function isUnreachable(error: { code?: string; message?: string; cause?: unknown }): boolean {
  if (error.code !== 'TRANSPORT') return false
  let current: unknown = error
  for (let depth = 0; current && depth < 6; depth++) {
    const { code, message } = current as { code?: unknown; message?: unknown }
    if (
      (typeof code === 'string' && UNREACHABLE.test(code)) ||
      (typeof message === 'string' && UNREACHABLE.test(message))
    )
      return true
    current = (current as { cause?: unknown }).cause
  }
  return false
}

/** Delay of the one quick retry allowed for an unreachable endpoint. */
const UNREACHABLE_RETRY_MS = 250

/**
 * Observes the retry waterfall: an unreachable endpoint (refused, unknown host) gets at most one
 * quick retry instead of the whole ladder; with progress on, each retry is announced.
 */
function watchRetries(ctx: Context, progress: ((line: string) => void) | undefined): () => void {
  return ctx.on(
    'agent/request-error',
    async (payload: RequestErrorPayload, next: () => Promise<RequestErrorDecision>): Promise<RequestErrorDecision> => {
      const unreachable = isUnreachable(payload.error)
      if (unreachable && payload.attempt > 1) return { action: 'fail' }
      let decision = await next()
      if (unreachable && decision.action === 'retry')
        decision = { action: 'retry', delayMs: Math.min(decision.delayMs, UNREACHABLE_RETRY_MS) }
      if (decision.action === 'retry') {
        progress?.(
          `retrying in ${(decision.delayMs / 1000).toFixed(1)}s after ${payload.error.code}: ${payload.error.message}`,
        )
      }
      return decision
    },
    { prepend: true },
  )
}

/** A short title for a tool call: its description, command, path or pattern, on one line. */
export function toolTitle(name: string, args: string): string {
  let parsed: Record<string, unknown> = {}
  try {
    const value = JSON.parse(args)
    if (value && typeof value === 'object') parsed = value as Record<string, unknown>
  } catch {
    // Arguments that are not JSON: the name alone.
  }
  const detail = ['description', 'command', 'file_path', 'path', 'pattern', 'query']
    .map((k) => parsed[k])
    .find((v) => typeof v === 'string' && v.trim())
  if (typeof detail !== 'string') return name
  const flat = detail.replace(/\s+/g, ' ').trim()
  return `${name}: ${flat.length > 80 ? flat.slice(0, 77) + '...' : flat}`
}

/** Progress lines for a session's events (model request, tool call). */
function progressOf(session: Session, model: ModelSelection, progress: (line: string) => void): () => void {
  return session.subscribe((event: SessionEvent) => {
    if (event.type === 'step/start') progress(`waiting for ${model.provider}/${model.model}`)
    else if (event.type === 'tool/call') {
      const call = event.data as { name: string; arguments: string }
      progress(`running ${toolTitle(call.name, call.arguments)}`)
    }
  })
}

export async function runHeadless(
  ctx: Context,
  config: Config,
  io: Io & { stdinReader?: (untilEnd: boolean, explicit: boolean) => Promise<string | undefined> },
): Promise<number> {
  let options: HeadlessOptions
  try {
    options = parseHeadlessArgs(ctx.get('cmdlineArgs')?.argv ?? [])
    // The run's permission mode is the process default from here on, before anything awaits:
    // what plugins ask before the session exists (the sandbox's prewarm: none under
    // danger-full-access) sees it. A name that is not a preset is reported below.
    const runPresets = ctx.get('permissionPresets')
    if (options.permissionMode !== undefined && runPresets?.get(options.permissionMode))
      runPresets.setDefault(options.permissionMode)
    if (options.help) {
      io.stdout.write(HELP)
      return 0
    }
    if (options.listSessions) return await listSessions(ctx, options, io)
    if (options.resumePick) return await pickSession(ctx, io)
    if (config.task !== undefined) options.task = config.task
    else options.task = await completeTask(options.task, io.stdinReader)
  } catch (error) {
    if (error instanceof UsageError) {
      // Stopped (a signal) while waiting for the task on stdin: the signal's exit code stands.
      if (readAbandoned) return 1
      io.stderr.write(`dsh: ${error.message}\n`)
      return 2
    }
    throw error
  }
  if (config.task === undefined && options.outputFormat === 'text' && config.outputFormat !== 'text') {
    options.outputFormat = config.outputFormat
  }
  const started = Date.now()
  let model: ModelSelection
  let session: Session | undefined
  try {
    model = await resolveModel(ctx, options.model, ctx.get('agentDefaultModel')?.get())
    session = await openSession(ctx, options, io)
    // A reopened session continues on the model last picked in it (`/model`), unless --model says otherwise.
    if (options.model === undefined && session) model = ctx.get('agentDefaultModel')?.ofSession(session) ?? model
  } catch (error) {
    if (error instanceof UsageError) {
      io.stderr.write(`dsh: ${error.message}\n`)
      return 2
    }
    io.stderr.write(`dsh: ${(error as Error).message}\n`)
    return 1
  }
  const presets = ctx.get('permissionPresets')
  if (options.permissionMode !== undefined) {
    if (!presets) {
      io.stderr.write('dsh: --permission-mode needs the permission-presets row in the profile\n')
      return 2
    }
    if (!presets.names().includes(options.permissionMode)) {
      io.stderr.write(
        `dsh: unknown --permission-mode '${options.permissionMode}'; valid: ${presets.names().join(', ')}\n`,
      )
      return 2
    }
  }
  if (options.preset !== undefined) {
    const agentPresets = ctx.get('agentPresets')
    if (!agentPresets) {
      io.stderr.write('dsh: --preset needs the agent-presets row in the profile\n')
      return 2
    }
    const recorded = session?.last('preset/selected')?.data.name
    if (recorded !== undefined && recorded !== options.preset) {
      io.stderr.write(
        `dsh: session ${session!.id} is composed from preset '${recorded}'; --preset cannot change it (leave --preset out)\n`,
      )
      return 2
    }
    try {
      agentPresets.setDefault(options.preset)
      await agentPresets.load(options.preset) // a bad row is a usage error now, not a failed turn later
    } catch (error) {
      io.stderr.write(`dsh: ${(error as Error).message}\n`)
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
  const gone = io.outputGone
  // Nothing is written once the reader is gone, and a running turn stops (no tokens spent on output nobody reads).
  const out = (text: string) => void (gone?.aborted || io.stdout.write(text))
  const write = (line: unknown) => out(JSON.stringify(line) + '\n')
  // Progress only where a human watches: text mode, stderr on a terminal.
  const progress =
    options.outputFormat === 'text' && (io.stderr as { isTTY?: boolean }).isTTY
      ? (line: string) => io.stderr.write(`dsh: ${line}\n`)
      : undefined
  const offs: Array<() => void> = [watchRetries(ctx, progress)]
  // An approval refused because nobody could be asked is told to the person as well as to the
  // model (the reader of a text answer would otherwise never learn why the work was not done).
  if (options.outputFormat === 'text') offs.push(tellRefusalsWithoutHuman(ctx, io))
  if (progress) offs.push(progressOf(agent.session, model, progress))
  if (options.outputFormat === 'stream-json') {
    offs.push(
      agent.session.subscribe((event: SessionEvent) => write({ type: 'event', sessionId: agent.session.id, event })),
    )
    // Subagents' own sessions (and theirs, recursively): each opens with `subagent/link` naming
    // its parent session; their events are printed tagged with the child id.
    const children = new Map<string, { id: string; parentSessionId: string }>()
    offs.push(
      ctx.on('session/event', (session, event) => {
        const type: string = event.type
        if (type === 'subagent/link') {
          const link = event.data as unknown as { id: string; parentSessionId: string }
          if (link.parentSessionId === agent.session.id || children.has(link.parentSessionId))
            children.set(session.id, { id: link.id, parentSessionId: link.parentSessionId })
        }
        const child = children.get(session.id)
        if (child) write({ type: 'event', sessionId: session.id, subagent: child, event })
      }),
    )
  }
  // Token usage of every subagent under this run's session (any depth: a child's own children are
  // found through the child sessions its `subagent/started` names), added to the result's usage.
  const tree = new Set<string>([agent.session.id])
  const rollup = { children: 0, usage: zeroUsage() }
  offs.push(
    ctx.on('session/event', (session, event) => {
      if (!tree.has(session.id)) return
      const type: string = event.type
      const data = event.data as unknown as { sessionId?: string; usage?: Partial<TokenUsage> }
      if (type === 'subagent/started' && data.sessionId) tree.add(data.sessionId)
      else if (type === 'subagent/finished') {
        rollup.children++
        if (data.usage) rollup.usage = sumUsage(rollup.usage, data.usage)
      }
    }),
  )
  const off = () => {
    for (const f of offs.splice(0)) f()
  }
  const commands = ctx.get('commands')
  // A command that starts a turn (`/plan <message>`, `/<skill> <request>`): that turn is the result.
  let commandTurn: Promise<TurnResult> | undefined
  if (commands?.isCommandLine(options.task)) {
    // `/compact`, `/help`, ...: a human command, run without a model turn.
    let started: TurnResult | undefined
    const offTurn = ctx.on('agent/turn-end', (ended, turn) => {
      if (ended === agent) started = turn
    })
    offs.push(offTurn)
    try {
      const done = await commands.dispatch(agent, options.task.trim())
      if (done.handled && done.ok && agent.status === 'running') {
        if (options.outputFormat === 'text') {
          if (done.output) io.stderr.write(`dsh: ${done.output.trimEnd()}\n`)
        } else {
          write({ type: 'command', sessionId: agent.session.id, command: done.name, output: done.output ?? '' })
        }
        commandTurn = agent
          .idle()
          .then(() => started ?? Promise.reject(new Error(`/${done.name} started a turn that did not end`)))
      } else if (done.handled) {
        off()
        if (!done.ok) {
          io.stderr.write(`dsh: ${done.error.message}\n`)
          return 1
        }
        if (options.outputFormat === 'text') {
          if (done.output) out(done.output.endsWith('\n') ? done.output : done.output + '\n')
        } else {
          write({ type: 'command', sessionId: agent.session.id, command: done.name, output: done.output ?? '' })
        }
        return 0
      }
    } finally {
      if (!commandTurn) off()
    }
  }
  let result: TurnResult
  const stopTurn = () => agent.abort('stdout was closed by its reader')
  gone?.addEventListener('abort', stopTurn, { once: true })
  try {
    if (gone?.aborted && !commandTurn) return EXIT_OUTPUT_CLOSED
    if (gone?.aborted) stopTurn()
    result = commandTurn ? await commandTurn : await agent.send(options.task)
    await agent.idle()
  } finally {
    gone?.removeEventListener('abort', stopTurn)
    off()
  }
  if (gone?.aborted) return EXIT_OUTPUT_CLOSED
  const turns = agent.session.events.filter((e) => e.type === 'turn/end').length
  if (options.outputFormat === 'text') {
    if (result.text) out(result.text.endsWith('\n') ? result.text : result.text + '\n')
  } else {
    const isError = result.reason !== 'completed'
    write({
      type: 'result',
      // The field names other one-shot CLIs print, so existing scripts can read ours; no model
      // catalog carries prices yet, so total_cost_usd is left out rather than guessed.
      session_id: agent.session.id,
      is_error: isError,
      result: result.text,
      // The parent's turn plus its subagents' (all depths); the children's share is apart too.
      usage: rollup.children ? sumUsage(result.usage, rollup.usage) : result.usage,
      ...(rollup.children ? { subagentUsage: rollup.usage, subagents: rollup.children } : {}),
      sessionId: agent.session.id,
      reason: result.reason,
      ...(result.error ? { error: result.error } : {}),
      turns,
      steps: result.steps,
      durationMs: Date.now() - started,
    })
  }
  if (result.reason !== 'completed') {
    if (result.error && isUnreachable(result.error)) {
      // The adapter's message names the base URL it tried (see @dsh/llm-deepseek transportError).
      io.stderr.write(`dsh: cannot reach the ${model.provider} API: ${result.error.message}\n`)
      return 1
    }
    const detail = result.error ? `: ${result.error.code}: ${result.error.message}` : ''
    io.stderr.write(`dsh: ${TURN_END_WORDS[result.reason] ?? `the turn ended (${result.reason})`}${detail}\n`)
    return 1
  }
  return 0
}

/**
 * One stderr line per approval request refused for lack of a person to ask (`noHuman`, from
 * @dsh/user-approval): `dsh: refused (no one to ask): <title>: <reason>`. The event is reached by
 * name: this bundle does not depend on the approval package, which the base bundle loads.
 */
function tellRefusalsWithoutHuman(ctx: Context, io: Io): () => void {
  type Resolved = (
    request: { title?: string },
    outcome: { decision?: string; reason?: string; noHuman?: boolean },
  ) => void
  const on = ctx.on as unknown as (name: string, listener: Resolved) => () => void
  return on('approval/resolved', (request, outcome) => {
    if (!outcome?.noHuman || outcome.decision === 'allowed-once' || outcome.decision === 'allowed-always') return
    const reason = outcome.reason ? `: ${outcome.reason}` : ''
    io.stderr.write(`dsh: refused (no one to ask): ${request?.title ?? 'an action that needs approval'}${reason}\n`)
  })
}

/** How the line on stderr says why a turn did not complete (`dsh: the turn failed: CODE: ...`). */
const TURN_END_WORDS: Partial<Record<string, string>> = {
  error: 'the turn failed',
  cancelled: 'the turn was cancelled',
  'max-tokens': 'the turn stopped at the output token limit',
  blocked: 'the turn was blocked',
  interrupted: 'the turn was interrupted',
}

async function openSession(ctx: Context, options: HeadlessOptions, io: Io): Promise<Session | undefined> {
  if (options.resume === undefined && !options.continue) return undefined
  const store = durable(ctx)
  if (!store) throw new UsageError('--resume/--continue need a session-persistence row in the profile')
  let id = options.resume
  if (options.continue) {
    // The newest session of this directory that ran a turn (a `/help` run leaves an empty one).
    const latest = (await store.list()).find((row) => row.cwd === process.cwd() && continuable(row))
    if (!latest) throw new UsageError(`--continue: no stored session for ${process.cwd()}`)
    id = latest.id
  }
  const opened = await store.resume(id!)
  for (const warning of opened.loaded.warnings) io.stderr.write(`dsh: warning: ${warning}\n`)
  return opened.session
}

const zeroUsage = (): TokenUsage => ({ input: 0, output: 0, cacheRead: 0, cacheWrite: 0, reasoning: 0 })
/** Adds usage that may come from another process (an `sdk` child) with fields missing. */
function sumUsage(a: TokenUsage, b: Partial<TokenUsage>): TokenUsage {
  const n = (v: unknown) => (typeof v === 'number' && Number.isFinite(v) ? v : 0)
  return {
    input: a.input + n(b.input),
    output: a.output + n(b.output),
    cacheRead: a.cacheRead + n(b.cacheRead),
    cacheWrite: a.cacheWrite + n(b.cacheWrite),
    reasoning: a.reasoning + n(b.reasoning),
  }
}

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
    // app-boot's loader takes an exit code; the plugin-loader typings declare `exit()` bare. Read
    // before the run: after a signal stopped the app, the disposed context no longer has it (and
    // the signal's status stands).
    const loader = ctx.get('loader') as { exit?(code: number): void } | undefined
    let code: number
    try {
      code = await runHeadless(ctx, config, io)
    } catch (error) {
      io.stderr.write(`dsh: headless run failed: ${(error as Error)?.message ?? error}\n`)
      code = 1
    }
    // The result's write may fail only after the run returned: wait until stdout took it.
    await new Promise<void>((resolve) => {
      if (gone.signal.aborted) return resolve()
      io.stdout.write('', () => resolve())
    })
    // A reader that left is the pipe's normal end (141); any other stdout failure is a failure (1).
    if (gone.signal.aborted)
      code = (gone.signal.reason as NodeJS.ErrnoException)?.code === 'EPIPE' ? EXIT_OUTPUT_CLOSED : 1
    if (loader?.exit) loader.exit(code)
    else process.exitCode = code
  }
  if (config.waitForReady) ctx.on('app/ready', () => void start())
  else void start()
  ctx.on('app/stopping', () => abandonRead?.())
}
