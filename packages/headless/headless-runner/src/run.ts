// One headless run: parse the arguments, settle the task, model and session, run the turn (or
// the command), print the result in the chosen format and return the exit status.
import { describeTurnEnd } from '@dsh/session'
import type { Context } from 'cordis'
import type { Agent, ModelSelection, TurnResult } from '@dsh/agent'
import type { Session, SessionEvent } from '@dsh/session'
import type { TokenUsage } from '@dsh/llm'
import { chooseModel, ExitCode, modelChoiceUsage } from '@dsh/surface-kit'
// Type-only: the `declare module 'cordis'` blocks that type `ctx.get('commands' | 'durableSessions' |
// 'permissionPresets')`; each row is optional in a profile, so each lookup may be undefined.
import type {} from '@dsh/commands'
import type {} from '@dsh/session-persistence'
import type {} from '@dsh/permission-presets'
import type {} from '@dsh/agent-presets'
import type {} from '@dsh/e2b'
import { HELP } from './help.ts'
import { UsageError, parseHeadlessArgs, type HeadlessOptions } from './args.ts'
import { completeTask, stdinReadAbandoned } from './stdin.ts'
import type { Io } from './io.ts'
import { listSessions, openSession, pickSession } from './sessions.ts'
import { isUnreachable, progressOf, tellRefusalsWithoutHuman, watchRetries } from './observe.ts'
import type { Config } from './index.ts'

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
      return ExitCode.ok
    }
    if (options.listSessions) return await listSessions(ctx, options, io)
    if (options.resumePick) return await pickSession(ctx, io)
    if (config.task !== undefined) options.task = config.task
    else options.task = await completeTask(options.task, io.stdinReader)
  } catch (error) {
    if (error instanceof UsageError) {
      // Stopped (a signal) while waiting for the task on stdin: the signal's exit code stands.
      if (stdinReadAbandoned()) return ExitCode.failed
      io.stderr.write(`dsh: ${error.message}\n`)
      return ExitCode.usage
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
      return ExitCode.usage
    }
    io.stderr.write(`dsh: ${(error as Error).message}\n`)
    return ExitCode.failed
  }
  const presets = ctx.get('permissionPresets')
  if (options.permissionMode !== undefined) {
    if (!presets) {
      io.stderr.write('dsh: --permission-mode needs the permission-presets row in the profile\n')
      return ExitCode.usage
    }
    if (!presets.names().includes(options.permissionMode)) {
      io.stderr.write(
        `dsh: unknown --permission-mode '${options.permissionMode}'; valid: ${presets.names().join(', ')}\n`,
      )
      return ExitCode.usage
    }
  }
  // The remote world's change comes back only with consent: --apply is that consent, for this run.
  const world = ctx.get('e2b')
  if (options.apply && !world) {
    io.stderr.write(
      "dsh: --apply needs --world e2b (it applies the remote sandbox's change to this directory); the local world changes files in place\n",
    )
    return ExitCode.usage
  }
  if (options.preset !== undefined) {
    const agentPresets = ctx.get('agentPresets')
    if (!agentPresets) {
      io.stderr.write('dsh: --preset needs the agent-presets row in the profile\n')
      return ExitCode.usage
    }
    const recorded = session?.last('preset/selected')?.data.name
    if (recorded !== undefined && recorded !== options.preset) {
      io.stderr.write(
        `dsh: session ${session!.id} is composed from preset '${recorded}'; --preset cannot change it (leave --preset out)\n`,
      )
      return ExitCode.usage
    }
    try {
      agentPresets.setDefault(options.preset)
      await agentPresets.load(options.preset) // a bad row is a usage error now, not a failed turn later
    } catch (error) {
      io.stderr.write(`dsh: ${(error as Error).message}\n`)
      return ExitCode.usage
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
          return ExitCode.failed
        }
        if (options.outputFormat === 'text') {
          if (done.output) out(done.output.endsWith('\n') ? done.output : done.output + '\n')
        } else {
          write({ type: 'command', sessionId: agent.session.id, command: done.name, output: done.output ?? '' })
        }
        return ExitCode.ok
      }
    } finally {
      if (!commandTurn) off()
    }
  }
  let result: TurnResult
  const stopTurn = () => agent.abort('stdout was closed by its reader')
  gone?.addEventListener('abort', stopTurn, { once: true })
  try {
    if (gone?.aborted && !commandTurn) return ExitCode.outputClosed
    if (gone?.aborted) stopTurn()
    result = commandTurn ? await commandTurn : await agent.send(options.task)
    await agent.idle()
  } finally {
    gone?.removeEventListener('abort', stopTurn)
    off()
  }
  if (gone?.aborted) return ExitCode.outputClosed
  // The run's sandboxes end here, each change saved as a patch (applied with --apply).
  const finished = world ? await world.finish({ apply: options.apply && result.reason === 'completed' }) : undefined
  for (const line of finished?.lines ?? []) io.stderr.write(`dsh: ${line}\n`)
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
      return ExitCode.failed
    }
    // A stop that interrupted the remote world's setup was said in its own line (what became of the sandbox).
    if (!(result.reason === 'cancelled' && finished?.interrupted))
      io.stderr.write(`dsh: ${describeTurnEnd(result.reason, result.error)}\n`)
    return ExitCode.failed
  }
  return finished?.failed ? ExitCode.failed : ExitCode.ok
}

/** How the line on stderr says why a turn did not complete (`dsh: the turn failed: CODE: ...`). */
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
