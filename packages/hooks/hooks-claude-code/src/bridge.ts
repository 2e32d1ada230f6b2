// The hook bridge shared by the Claude Code and Codex dialects (they answer in the same format):
// the dialect's hook files and a row's `hooks` read and checked, the project's hook files gated by
// project trust, and one listener per interception point that has hooks, each run logged as
// `hook/run`. index.ts is the Claude Code row on top of it.
import { relative } from 'node:path'
import type { Context } from 'cordis'
import type { Agent } from '@dsh/agent'
import type { Session } from '@dsh/session'
import type { ToolOutput } from '@dsh/tools'
import type {} from '@dsh/compaction'
import type {} from '@dsh/user-approval'
import {
  decodeOutcome,
  logHookRun,
  matches,
  mostRestrictive,
  registerHookEvents,
  runHookCommand,
  type HookOutcome,
  type PermissionDecision,
} from '@dsh/hook-protocol'
import {
  projectFileDigests,
  shellCommandTargets,
  type ProjectTrust,
  type TrustItem,
  type TrustRequest,
} from '@dsh/project-trust'
import { checkHooks, readSettingsHooks, type HookEntry, type SupportedEvent } from './config.ts'

/**
 * What differs between hook dialects that share Claude Code's answer format (Codex copied it):
 * where the hooks are declared, how tools are named, the environment, extra stdin fields.
 */
export interface HookDialect {
  /** Logged as `hook/run.dialect`. */
  dialect: string
  /** Package name, the `source.plugin` of messages a hook adds. */
  plugin: string
  /** The user's JSON files whose top-level `hooks` key is read, in order (missing files are fine). */
  files: string[]
  /** The project's hook files: read like `files`, but their hooks run only once the project is trusted. */
  project?: ProjectHookFiles
  toolName(name: string): string
  env: Record<string, string>
  /** Extra stdin fields for every event. */
  extraInput?: () => Record<string, unknown>
}

export interface ProjectHookFiles {
  /** The project-trust source id, e.g. `hooks-claude-code`. */
  source: string
  /** A human label, e.g. "Claude Code hooks". */
  label: string
  /** The project directory. */
  dir: string
  /** Absolute paths of the project's hook files. */
  files: string[]
}

/**
 * What a project's hook entries would run, for `@dsh/project-trust`: event, matcher, command and
 * the digests of the project's own files the command executes (`$CLAUDE_PROJECT_DIR/...` included),
 * so a trusted hook script that a confined command rewrote is asked about again. The timeout is
 * not part of it.
 */
export function hookTrustItems(entries: readonly HookEntry[], dir: string): TrustItem[] {
  return entries.map((entry) => ({
    file: relative(dir, entry.origin) || entry.origin,
    kind: 'hook',
    name: `${entry.event}${entry.matcher !== undefined ? `[${entry.matcher}]` : ''}`,
    display: entry.command,
    run: {
      event: entry.event,
      matcher: entry.matcher ?? null,
      command: entry.command,
      files: hookFileDigests(entry, dir),
    },
  }))
}

/** The digests of the project files a hook's command executes. */
export function hookFileDigests(entry: HookEntry, dir: string): Record<string, string> {
  return projectFileDigests(dir, shellCommandTargets(entry.command.replace(/\$\{?CLAUDE_PROJECT_DIR\}?/g, dir)))
}

/** Reads the project's hook files: every entry, the problems, and the trust request they make. */
export function readProjectHooks(
  project: ProjectHookFiles,
  defaultTimeoutMs = 60_000,
): { entries: HookEntry[]; problems: string[]; request: TrustRequest } {
  const entries: HookEntry[] = []
  const problems: string[] = []
  for (const file of project.files) {
    const read = readSettingsHooks(file)
    if (read.problem) problems.push(read.problem)
    const checked = checkHooks(read.hooks, file, defaultTimeoutMs)
    problems.push(...checked.problems)
    for (const entry of checked.entries) {
      if (!entries.some((e) => e.event === entry.event && e.matcher === entry.matcher && e.command === entry.command))
        entries.push(entry)
    }
  }
  return {
    entries,
    problems,
    request: {
      source: project.source,
      label: project.label,
      dir: project.dir,
      items: hookTrustItems(entries, project.dir),
    },
  }
}

export interface BridgeOptions {
  hooks: Record<string, unknown>
  cwd: string
  defaultTimeoutSec: number
  maxStopContinuations: number
}

interface Ran {
  entry: HookEntry
  outcome: HookOutcome
}

const field = (json: { [key: string]: unknown } | undefined, key: string): unknown => json?.[key]
const specific = (json: { [key: string]: unknown } | undefined): { [key: string]: unknown } | undefined => {
  const value = json?.hookSpecificOutput
  return value !== null && typeof value === 'object' && !Array.isArray(value)
    ? (value as { [key: string]: unknown })
    : undefined
}
const text = (value: unknown) => (typeof value === 'string' && value.trim() !== '' ? value.trim() : undefined)

function appendText(output: ToolOutput, note: string): ToolOutput {
  if (typeof output.content === 'string') return { ...output, content: `${output.content}\n\n${note}` }
  return { ...output, content: [...output.content, { type: 'text', text: note }] }
}

function outputText(output: ToolOutput): string {
  return typeof output.content === 'string'
    ? output.content
    : output.content.map((b) => (b.type === 'text' ? b.text : `[${b.type}]`)).join('\n')
}

/**
 * Reads the dialect's hook files and the row's `hooks`, and registers the listeners of the
 * events that have hooks. Shared by the Claude Code and Codex bridges.
 */
export function createHookBridge(ctx: Context, config: BridgeOptions, dialect: HookDialect): void {
  const SOURCE = { kind: 'plugin' as const, plugin: dialect.plugin }
  const toolNameOf = dialect.toolName
  const cwd = config.cwd
  const defaultTimeoutMs = Math.round(config.defaultTimeoutSec * 1000)
  const entries: HookEntry[] = []
  const load = (table: unknown, origin: string) => {
    const checked = checkHooks(table, origin, defaultTimeoutMs)
    for (const problem of checked.problems) ctx.logger('hooks').warn(problem)
    for (const entry of checked.entries) {
      // The same command for the same event and matcher, declared twice, runs once.
      if (!entries.some((e) => e.event === entry.event && e.matcher === entry.matcher && e.command === entry.command))
        entries.push(entry)
    }
  }
  for (const file of dialect.files) {
    const read = readSettingsHooks(file)
    if (read.problem) ctx.logger('hooks').warn(read.problem)
    load(read.hooks, file)
  }
  load(config.hooks, 'config')
  // The project's hooks wait for consent: listeners are registered for their events too, but `run`
  // sees only `entries`, which they join once `ctx.projectTrust` starts them. Without a
  // project-trust row they never run (fail closed).
  const held: HookEntry[] = []
  const pinned = new Map<HookEntry, { dir: string; files: string }>()
  const canonical = (files: Record<string, string>) =>
    JSON.stringify(Object.entries(files).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
  let trust: ProjectTrust | undefined
  if (dialect.project) {
    const project = readProjectHooks(dialect.project, defaultTimeoutMs)
    for (const problem of project.problems) ctx.logger('hooks').warn(problem)
    for (const entry of project.entries) {
      if (!entries.some((e) => e.event === entry.event && e.matcher === entry.matcher && e.command === entry.command))
        held.push(entry)
    }
    if (held.length > 0) {
      const dir = dialect.project.dir
      const request = { ...project.request, items: hookTrustItems(held, dir) }
      // A trusted project hook runs only while the project files it executes are still the ones
      // consented to: a confined command may rewrite a hook script during the session.
      for (const [i, entry] of held.entries())
        pinned.set(entry, { dir, files: canonical((request.items[i]!.run as { files: Record<string, string> }).files) })
      ctx.inject(['projectTrust'], (inner) => {
        inner.effect(() => {
          trust = inner.projectTrust
          let off: () => void = () => {}
          try {
            off = inner.projectTrust.gate(request, () => {
              entries.push(...held.filter((entry) => !entries.includes(entry)))
            })
          } catch (error) {
            ctx.logger('hooks').warn(`the project's hooks were not enabled: ${(error as Error).message}`)
          }
          return () => {
            off()
            trust = undefined
          }
        }, `hooks: ${dialect.dialect} project hooks behind project trust`)
      })
    }
  }
  registerHookEvents(ctx)
  if (entries.length === 0 && held.length === 0) return

  const env = dialect.env
  const run = async (
    event: SupportedEvent,
    input: { [key: string]: unknown },
    options: {
      toolName?: string
      matchOn?: string
      session?: Session
      cwd: string
      signal?: AbortSignal
      among?: readonly HookEntry[]
    },
  ): Promise<Ran[]> => {
    const subject = options.toolName ?? options.matchOn
    const selected = (options.among ?? entries).filter((e) => {
      if (e.event !== event || (subject !== undefined && !matches(e.matcher, subject))) return false
      const pin = pinned.get(e)
      if (pin && canonical(hookFileDigests(e, pin.dir)) !== pin.files) {
        ctx
          .logger('hooks')
          .warn(
            `the project hook "${e.command}" (${e.origin}) was not run: a file it executes changed after the project was trusted`,
          )
        return false
      }
      return true
    })
    return Promise.all(
      selected.map(async (entry) => {
        const result = await runHookCommand(ctx.subprocess, {
          command: entry.command,
          cwd: options.cwd,
          env,
          input,
          timeoutMs: entry.timeoutMs,
          ...(options.signal ? { signal: options.signal } : {}),
        })
        const outcome = decodeOutcome(result, entry.timeoutMs)
        logHookRun(ctx, options.session, {
          dialect: dialect.dialect,
          event,
          command: entry.command,
          ...(entry.matcher !== undefined ? { matcher: entry.matcher } : {}),
          ...(options.toolName !== undefined ? { toolName: options.toolName } : {}),
          origin: entry.origin,
          input,
          result,
          outcome,
        })
        return { entry, outcome }
      }),
    )
  }
  const common = (event: SupportedEvent, sessionId: string | undefined, at: string) => ({
    session_id: sessionId ?? '',
    transcript_path: '',
    cwd: at,
    hook_event_name: event,
    ...dialect.extraInput?.(),
  })
  const has = (event: SupportedEvent) => entries.some((e) => e.event === event) || held.some((e) => e.event === event)

  if (has('PreToolUse')) {
    ctx.on('tools/pre-execute', async (payload, next) => {
      const toolName = toolNameOf(payload.tool.name)
      const session = payload.context.sessionId !== undefined ? ctx.sessions.get(payload.context.sessionId) : undefined
      const input = {
        ...common('PreToolUse', payload.context.sessionId, payload.context.cwd),
        tool_name: toolName,
        tool_input: payload.args,
        tool_use_id: payload.call.callId,
      }
      const ran = await run('PreToolUse', input, {
        toolName,
        ...(session ? { session } : {}),
        cwd: payload.context.cwd,
        signal: payload.context.signal,
      })
      const decisions: PermissionDecision[] = []
      const reasons: string[] = []
      let updated: unknown
      for (const { outcome } of ran) {
        if (outcome.kind === 'block') {
          decisions.push('deny')
          reasons.push(outcome.message)
          continue
        }
        if (outcome.kind !== 'ok') continue
        const json = outcome.json
        const hso = specific(json)
        let decision = hso?.permissionDecision as string | undefined
        let reason = text(hso?.permissionDecisionReason)
        if (decision === undefined) {
          const legacy = field(json, 'decision')
          if (legacy === 'block') decision = 'deny'
          else if (legacy === 'approve') decision = 'allow'
          reason ??= text(field(json, 'reason'))
        }
        if (field(json, 'continue') === false) {
          decision = 'deny'
          reason = text(field(json, 'stopReason')) ?? reason
        }
        if (decision === 'deny' || decision === 'allow' || decision === 'ask') decisions.push(decision)
        if (decision === 'deny' && reason) reasons.push(reason)
        if (hso?.updatedInput !== null && typeof hso?.updatedInput === 'object' && !Array.isArray(hso.updatedInput))
          updated = hso.updatedInput
      }
      if (mostRestrictive(decisions) === 'deny') {
        payload.decision = {
          deny: `a PreToolUse hook blocked it: ${reasons.join('; ') || 'no reason given'}`,
          code: 'HOOK_DENIED',
        }
        return
      }
      if (updated !== undefined) payload.args = updated
      return next()
    })
  }

  if (has('PostToolUse')) {
    ctx.on('tools/post-execute', async (payload, next) => {
      await next()
      const toolName = toolNameOf(payload.tool.name)
      const session = payload.context.sessionId !== undefined ? ctx.sessions.get(payload.context.sessionId) : undefined
      const isError = payload.output.isError === true || payload.output.error !== undefined
      const input = {
        ...common('PostToolUse', payload.context.sessionId, payload.context.cwd),
        tool_name: toolName,
        tool_input: payload.args,
        tool_response: { content: outputText(payload.output), is_error: isError },
        tool_use_id: payload.call.callId,
      }
      const ran = await run('PostToolUse', input, {
        toolName,
        ...(session ? { session } : {}),
        cwd: payload.context.cwd,
      })
      const notes: string[] = []
      for (const { outcome } of ran) {
        if (outcome.kind === 'block') notes.push(`[PostToolUse hook feedback] ${outcome.message}`)
        if (outcome.kind !== 'ok') continue
        if (field(outcome.json, 'decision') === 'block')
          notes.push(
            `[PostToolUse hook feedback] ${text(field(outcome.json, 'reason')) ?? 'the hook flagged this result'}`,
          )
        const context = text(specific(outcome.json)?.additionalContext)
        if (context) notes.push(`[PostToolUse hook context] ${context}`)
      }
      if (notes.length > 0) payload.output = appendText(payload.output, notes.join('\n'))
    })
  }

  if (has('UserPromptSubmit')) {
    ctx.on('agent/pre-step', async (payload, next) => {
      const human = payload.messages.filter((m) => m.source.kind === 'human')
      if (human.length === 0) return next()
      const prompt = human
        .map((m) =>
          typeof m.content === 'string' ? m.content : m.content.map((b) => (b.type === 'text' ? b.text : '')).join(''),
        )
        .join('\n\n')
      const agent = payload.agent
      const input = { ...common('UserPromptSubmit', agent.session.id, agent.cwd), prompt }
      const ran = await run('UserPromptSubmit', input, { session: agent.session, cwd: agent.cwd })
      const contexts: string[] = []
      for (const { outcome } of ran) {
        if (outcome.kind === 'block')
          return {
            action: 'reject',
            code: 'HOOK_BLOCKED',
            reason: `a UserPromptSubmit hook blocked the prompt: ${outcome.message}`,
          }
        if (outcome.kind !== 'ok') continue
        const json = outcome.json
        if (field(json, 'decision') === 'block' || field(json, 'continue') === false) {
          const reason = text(field(json, 'reason')) ?? text(field(json, 'stopReason')) ?? 'no reason given'
          return {
            action: 'reject',
            code: 'HOOK_BLOCKED',
            reason: `a UserPromptSubmit hook blocked the prompt: ${reason}`,
          }
        }
        const context = json ? text(specific(json)?.additionalContext) : text(outcome.stdout)
        if (context) contexts.push(context)
      }
      for (const context of contexts)
        payload.messages.push({ content: context, source: { ...SOURCE, label: 'UserPromptSubmit hook' } })
      return next()
    })
  }

  if (has('SessionStart')) {
    // Runs when an agent is created; the agent's first step waits for it and enters what the hooks
    // print (plain stdout or additionalContext) as context messages ahead of the first prompt.
    // A project's SessionStart hooks trusted at the session's first step (the human was asked
    // then) run at that step, after the ones that started with the agent.
    const starting = new WeakMap<Agent, { contexts: Promise<string[]>; ran: HookEntry[]; source: string }>()
    const contextsOf = (ran: Ran[]) =>
      ran.flatMap(({ outcome }) => {
        if (outcome.kind !== 'ok') return []
        const context = outcome.json ? text(specific(outcome.json)?.additionalContext) : text(outcome.stdout)
        return context ? [context] : []
      })
    ctx.on('agent/created', (agent) => {
      const source = agent.session.events.some((e) => e.type === 'turn/start') ? 'resume' : 'startup'
      const input = { ...common('SessionStart', agent.session.id, agent.cwd), source }
      const ran = entries.filter((e) => e.event === 'SessionStart')
      starting.set(agent, {
        contexts: run('SessionStart', input, {
          matchOn: source,
          session: agent.session,
          cwd: agent.cwd,
          among: ran,
        }).then(contextsOf),
        ran,
        source,
      })
    })
    ctx.on(
      'agent/pre-step',
      async (payload, next) => {
        const pending = starting.get(payload.agent)
        if (pending) {
          starting.delete(payload.agent)
          const agent = payload.agent
          const contexts = await pending.contexts
          if (held.some((e) => e.event === 'SessionStart')) {
            await trust?.consent({ sessionId: agent.session.id })
            const late = entries.filter((e) => e.event === 'SessionStart' && !pending.ran.includes(e))
            if (late.length > 0) {
              const input = { ...common('SessionStart', agent.session.id, agent.cwd), source: pending.source }
              contexts.push(
                ...contextsOf(
                  await run('SessionStart', input, {
                    matchOn: pending.source,
                    session: agent.session,
                    cwd: agent.cwd,
                    among: late,
                  }),
                ),
              )
            }
          }
          for (const context of contexts)
            payload.messages.unshift({ content: context, source: { ...SOURCE, label: 'SessionStart hook' } })
        }
        return next()
      },
      { prepend: true },
    )
  }

  if (has('SessionEnd')) {
    ctx.on('agent/disposed', (agent) => {
      const input = { ...common('SessionEnd', agent.session.id, agent.cwd), reason: 'other' }
      void run('SessionEnd', input, { matchOn: 'other', session: agent.session, cwd: agent.cwd })
    })
  }

  if (has('PreCompact')) {
    // Before the history is summarised; `manual` for /compact, `auto` otherwise (the threshold or a
    // context overflow). What the hook prints is logged; it cannot stop the compaction.
    ctx.on('compaction/before', async (session, options) => {
      const trigger = options.reason === 'manual' ? 'manual' : 'auto'
      const at = options.agent?.cwd ?? cwd
      const input = { ...common('PreCompact', session.id, at), trigger, custom_instructions: options.focus ?? '' }
      await run('PreCompact', input, { matchOn: trigger, session, cwd: at })
    })
  }

  if (has('Notification')) {
    // A pending approval is what Claude Code notifies about ("needs your permission"); runs in the
    // background, so a slow hook never delays the question.
    ctx.on('approval/requested', (request) => {
      const session = request.sessionId !== undefined ? ctx.sessions.get(request.sessionId) : undefined
      const input = {
        ...common('Notification', request.sessionId, cwd),
        message: `dsh needs your permission: ${request.title}`,
        notification_type: 'permission_prompt',
      }
      void run('Notification', input, { matchOn: 'permission_prompt', ...(session ? { session } : {}), cwd })
    })
  }

  if (has('Stop') || has('SubagentStop')) {
    const continued = new WeakMap<Agent, number>()
    // A subagent's child session carries its link to the parent (logged by @dsh/subagent).
    const isChild = (agent: Agent) => agent.session.events.some((e) => (e.type as string) === 'subagent/link')
    ctx.on('agent/turn-stopping', async (payload) => {
      const agent = payload.agent
      if (payload.reason !== 'completed') {
        continued.delete(agent)
        return
      }
      const event = isChild(agent) ? 'SubagentStop' : 'Stop'
      if (!has(event)) return
      const count = continued.get(agent) ?? 0
      const input = { ...common(event, agent.session.id, agent.cwd), stop_hook_active: count > 0 }
      const ran = await run(event, input, { session: agent.session, cwd: agent.cwd })
      const reasons: string[] = []
      for (const { outcome } of ran) {
        if (outcome.kind === 'block') reasons.push(outcome.message)
        else if (outcome.kind === 'ok' && field(outcome.json, 'decision') === 'block')
          reasons.push(text(field(outcome.json, 'reason')) ?? 'a Stop hook asked to continue')
      }
      // A child's run ends with its first turn (its answer is the parent's tool result), so a
      // SubagentStop block is logged but does not continue the child.
      if (event === 'SubagentStop') return
      if (reasons.length === 0 || count >= config.maxStopContinuations) {
        if (reasons.length > 0)
          ctx.logger('hooks').warn('Stop hook asked to continue %d times in a row; stopping anyway', count)
        continued.delete(agent)
        return
      }
      continued.set(agent, count + 1)
      // Queued now, it starts the next turn once this one has ended.
      void agent.send(reasons.join('\n'), { source: { ...SOURCE, label: 'Stop hook' } })
    })
  }
}
