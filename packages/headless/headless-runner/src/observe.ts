// What a run watches besides its answer: the retry waterfall (an unreachable endpoint gets one
// quick retry), progress lines on a terminal's stderr, and approvals refused for lack of a person.
import type { Context } from 'cordis'
import type { ModelSelection, RequestErrorDecision, RequestErrorPayload } from '@dsh/agent'
import type { Session, SessionEvent } from '@dsh/session'
import type { Io } from './io.ts'

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
export function watchRetries(ctx: Context, progress: ((line: string) => void) | undefined): () => void {
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
export function progressOf(session: Session, model: ModelSelection, progress: (line: string) => void): () => void {
  return session.subscribe((event: SessionEvent) => {
    if (event.type === 'step/start') progress(`waiting for ${model.provider}/${model.model}`)
    else if (event.type === 'tool/call') {
      const call = event.data as { name: string; arguments: string }
      progress(`running ${toolTitle(call.name, call.arguments)}`)
    }
  })
}

/**
 * One stderr line per approval request refused for lack of a person to ask (`noHuman`, from
 * @dsh/user-approval): `dsh: refused (no one to ask): <title>: <reason>`. The event is reached by
 * name: this bundle does not depend on the approval package, which the base bundle loads.
 */
export function tellRefusalsWithoutHuman(ctx: Context, io: Io): () => void {
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
