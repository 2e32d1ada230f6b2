// The two in-process providers. `spawn`: a fresh child agent with an empty session of its own.
// `fork`: the same, but its session starts as a copy of the parent's completed turns. Both reuse
// the host's agent factory, model selection, tools and system prompt.
import { describeTurnEnd } from '@dsh/session'
import type { Context } from 'cordis'
import type { Agent, TurnResult } from '@dsh/agent'
import type { Session } from '@dsh/session'
import type {} from '@dsh/permission-presets'
import type {} from '@dsh/sandbox-policy'
import type { ChildOutcome, ProviderChild, SubagentProvider } from './types.ts'

/** The seq right after the parent's last completed turn (its running turn, if any, is left out). */
export function completedBoundary(session: Session): number {
  const events = session.events
  for (let seq = events.length - 1; seq >= 0; seq--) {
    const type = events[seq].type
    if (type === 'turn/end') return events.length
    if (type === 'turn/start') return seq
  }
  return events.length
}

export function outcomeOf(result: TurnResult): ChildOutcome {
  const usage = { usage: result.usage }
  if (result.reason === 'completed') return { status: 'completed', text: result.text, ...usage }
  if (result.reason === 'cancelled' || result.reason === 'interrupted') {
    return { status: 'cancelled', text: result.text, ...(result.error ? { error: result.error } : {}), ...usage }
  }
  const error = result.error ?? {
    code: result.reason.toUpperCase().replace('-', '_'),
    message: describeTurnEnd(result.reason, undefined, "the child's turn"),
  }
  return { status: 'failed', text: result.text, error, ...usage }
}

export const PARENT_MESSAGE_SOURCE = {
  kind: 'plugin',
  plugin: '@dsh/subagent',
  label: 'message from the parent agent',
} as const

export function inProcessProvider(
  ctx: Context,
  mode: 'spawn' | 'fork',
  options: { maxSteps?: number } = {},
): SubagentProvider {
  return {
    name: mode,
    description:
      mode === 'spawn'
        ? 'a fresh agent in this process: same tools and model, no view of your conversation (give it the whole task)'
        : 'an agent in this process that starts from a copy of your conversation so far (your current turn excluded)',
    worlds: true,
    start({ parent, link, prompt, world }): ProviderChild {
      // In a world of its own, every call of the child's turns runs inside the lease.
      const within = <T>(fn: () => T): T => (world ? world.run(fn) : fn())
      // A spawned child copies nothing (boundary 0) but still names its parent session, so stores
      // and listings can tell a child's log from a conversation of its own.
      const session =
        mode === 'fork'
          ? ctx.sessions.fork(parent.session, completedBoundary(parent.session))
          : ctx.sessions.create({ cwd: parent.cwd, parent: { sessionId: parent.session.id, boundary: 0 } })
      // The child works under its parent's permission preset (sandbox mode and approval policy).
      const presets = ctx.get('permissionPresets')
      const inherited = presets?.current(parent.session.id)
      if (presets && inherited && inherited.name !== presets.default.name) presets.set(session.id, inherited.name)
      // A mode set on the parent session itself (a sandbox override, not a preset) holds for the child too.
      const policy = ctx.get('sandboxPolicy')
      const parentMode = policy?.modeFor(parent.session.id)
      const overridden = Boolean(policy && parentMode && policy.modeFor(session.id) !== parentMode)
      if (overridden) policy!.setMode(session.id, parentMode!)
      let agent: Agent
      try {
        session.append('subagent/link', link)
        agent = ctx.agents.create({
          cwd: parent.cwd,
          model: { ...parent.model },
          session,
          ...(options.maxSteps !== undefined ? { maxSteps: options.maxSteps } : {}),
        })
      } catch (error) {
        ctx.sessions.delete(session.id)
        throw error
      }
      const child = agent
      const result = within(() => child.send(prompt)).then(
        outcomeOf,
        (error: unknown): ChildOutcome => ({
          status: 'failed',
          text: '',
          error: { code: 'CHILD_ERROR', message: error instanceof Error ? error.message : String(error) },
        }),
      )
      return {
        sessionId: session.id,
        agentId: child.id,
        result,
        send(message) {
          within(() => child.send(message, { source: PARENT_MESSAGE_SOURCE })).catch(() => {})
        },
        abort() {
          child.abort()
        },
        async dispose() {
          await child.dispose()
          // The child's log stays in persistence; the live copy leaves the store.
          ctx.sessions.delete(session.id)
          if (presets && inherited && inherited.name !== presets.default.name) presets.clear(session.id)
          // The session already left the store, so clearing logs nothing; it only frees the entry.
          if (overridden) policy!.setMode(session.id, null)
        },
      }
    },
  }
}
