// The first invariant: model-visible means logged. Everything a model request carries must be
// reconstructable from the session log alone.
import type { LlmRequest } from '@dsh/llm'
import { deriveMessagesFromEvents, firstDifference, type Session, type SessionEvent } from '@dsh/session'
import type { InvariantDefinition, InvariantViolation, InvariantsLike } from './types.ts'

export const MODEL_VISIBLE_MEANS_LOGGED = 'model-visible-means-logged'

/**
 * Checks that `request` can be rebuilt from `session`'s events with `seq < atSeq` (pass the log
 * length at the moment the request was issued):
 * - `messages` must equal a from-scratch derivation of that log prefix (not the live surface
 *   cache, so a bug in the incremental index is caught too);
 * - `provider`, `model`, `system` and `tools` must equal the last `request/header` before `atSeq`
 *   (a missing `system` counts as `''`, missing `tools` as `[]`).
 * Returns one violation per mismatching part, each naming the first differing path. `signal`,
 * `metadata`, `maxTokens` and `reasoningEffort` are not compared (the header does not log them).
 */
export function checkRequestReconstructable(
  session: Session,
  request: LlmRequest,
  atSeq: number,
): InvariantViolation[] {
  if (!Number.isInteger(atSeq) || atSeq < 0 || atSeq > session.length) {
    throw new RangeError(
      `checkRequestReconstructable: atSeq must be an integer in [0, ${session.length}], got ${String(atSeq)}`,
    )
  }
  const violations: InvariantViolation[] = []
  const violation = (path: string, message: string, details?: unknown): void => {
    violations.push({
      invariant: MODEL_VISIBLE_MEANS_LOGGED,
      sessionId: session.id,
      seq: atSeq,
      path,
      message,
      details,
    })
  }
  const prefix = session.slice(0, atSeq)
  const expected = deriveMessagesFromEvents(prefix)
  const messagesDiff = firstDifference(request.messages, expected, 'request.messages')
  if (messagesDiff !== undefined) {
    violation(
      messagesDiff,
      `request messages differ from the history derived from the log before seq ${atSeq} at ${messagesDiff}`,
      { expected: valueAt(expected, messagesDiff), actual: valueAt(request.messages, messagesDiff) },
    )
  }
  let header: SessionEvent<'request/header'> | undefined
  for (let i = prefix.length - 1; i >= 0 && !header; i--) {
    const event = prefix[i]
    if (event.type === 'request/header') header = event
  }
  if (!header) {
    violation(
      'request',
      `no request/header event is logged before seq ${atSeq}: the system prompt and tools of this request are not in the log`,
    )
    return violations
  }
  const actual = {
    provider: request.provider,
    model: request.model,
    system: request.system ?? '',
    tools: request.tools ?? [],
  }
  const logged = {
    provider: header.data.provider,
    model: header.data.model,
    system: header.data.system,
    tools: header.data.tools,
  }
  const headerDiff = firstDifference(actual, logged, 'request')
  if (headerDiff !== undefined) {
    violation(
      headerDiff,
      `request header differs from the request/header logged at seq ${header.seq} at ${headerDiff}`,
      {
        headerSeq: header.seq,
      },
    )
  }
  return violations
}

/** Best-effort lookup of a `request.messages[1].content[0]`-style path for violation details. */
function valueAt(root: unknown, path: string): unknown {
  const steps =
    path.replace(/^request\.messages/, '').match(/\[(\d+)\]|\.([A-Za-z_$][\w$]*)|\[("(?:[^"\\]|\\.)*")\]/g) ?? []
  let value: unknown = root
  for (const step of steps) {
    if (value === null || typeof value !== 'object') return undefined
    const key = step.startsWith('[')
      ? step.startsWith('["')
        ? (JSON.parse(step.slice(1, -1)) as string)
        : Number(step.slice(1, -1))
      : step.slice(1)
    value = (value as Record<string | number, unknown>)[key]
  }
  return value
}

/** Context for this invariant: `ctx.invariants.run(session, { request, atSeq })`. */
export interface RequestCheckContext {
  request?: LlmRequest
  /** Log length when the request was issued; defaults to the current length. */
  atSeq?: number
}

export const modelVisibleMeansLogged: InvariantDefinition = {
  id: MODEL_VISIBLE_MEANS_LOGGED,
  description:
    'Every model request is reconstructable from the session log: messages from the surface, system and tools from request/header.',
  check(session, context) {
    const { request, atSeq } = context as RequestCheckContext
    if (!request) return
    return checkRequestReconstructable(session, request, atSeq ?? session.length)
  },
}

/** Registers `modelVisibleMeansLogged` on `invariants` (e.g. `ctx.invariants`); returns the disposer. */
export function registerModelVisibleMeansLogged(invariants: InvariantsLike): () => void {
  return invariants.register(modelVisibleMeansLogged)
}
