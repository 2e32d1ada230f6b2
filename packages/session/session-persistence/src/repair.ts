// Crash repair as pure functions over a loaded log. Repair never rewrites history: it computes
// events to append so the log is well-formed again (every tool call answered, no open step or turn).
import type { ToolMessage } from '@dsh/llm'
import { CallIdentities, type AnySessionEvent, type SessionEvent, type SessionEventMap } from '@dsh/session'
import type { Repair } from './types.ts'

export interface RepairPlan {
  /** Events to append, with seq continuing the log. Empty for a log that needs nothing. */
  append: SessionEvent[]
  repairs: Repair[]
}

interface PendingCall {
  /** The call's session-unique identity (CallIdentities in log order). */
  identity: string
  /** The id the log holds for it: what its result must carry (in an old log, not unique). */
  callId: string
  name: string
  /** A `tool/call` event named it (an assistant message's block alone does not). */
  logged: boolean
  started: boolean
}

export const REPAIR_TEXT = {
  unknown:
    'The session was interrupted while this tool call was running. It had started, so its effects may or may not have happened; check the current state before repeating it.',
  unmarked:
    'The session was interrupted before this tool call was answered; whether it ran is unknown. Check the current state before repeating it.',
  notStarted: 'The session was interrupted before this tool call started; it did not run.',
} as const

/**
 * Plans the repair of a log whose writer died: each tool call without a result gets an error
 * result, an open step gets `step/end {finish: 'error'}`, an open turn gets
 * `turn/end {reason: 'interrupted'}`, in that order.
 *
 * An orphaned call with a `tool/started` marker started: its outcome is unknown. Without a marker
 * it never started, provided the log carries markers at all (the checkpoint policy was active);
 * in a log with no markers anywhere nothing can be told, so the outcome is reported unknown.
 */
export function planRepair(events: readonly AnySessionEvent[], time: number): RepairPlan {
  let openTurn: number | undefined
  let openStep: { turn: number; step: number } | undefined
  let markers = false
  // Calls are paired with their results by log identity, not by the id alone: a log written
  // before call identities (issue 43) may repeat an id (a provider numbering calls per response
  // sends `call_0_0` every turn; one sending no id gets `call_0` every step), so an earlier
  // call's result must not count as the answer of a later call with the same id. Each call gets
  // its identity where it first appears (its assistant message's block, else its `tool/call`);
  // a `tool/call`, `tool/started` or `tool/result` naming an id goes to the earliest unanswered
  // call with that id (results are logged in call order).
  const identities = new CallIdentities()
  const pending = new Map<string, PendingCall>()
  const open = (callId: string) => [...pending.values()].filter((c) => c.callId === callId)
  const declare = (callId: string, name: string, logged: boolean) => {
    const identity = identities.assign(callId)
    pending.set(identity, { identity, callId, name, logged, started: false })
  }
  for (const event of events) {
    switch (event.type) {
      case 'turn/start':
        openTurn = event.data.turn
        break
      case 'turn/end':
        openTurn = undefined
        openStep = undefined
        break
      case 'step/start':
        openStep = { turn: event.data.turn, step: event.data.step }
        break
      case 'step/end':
        openStep = undefined
        break
      case 'assistant/message':
        for (const block of event.data.message.content) {
          if (block.type === 'tool-call') declare(block.callId, block.name, false)
        }
        break
      case 'tool/call': {
        const declared = open(event.data.callId).find((c) => !c.logged)
        if (declared) declared.logged = true
        else declare(event.data.callId, event.data.name, true)
        break
      }
      case 'tool/started': {
        markers = true
        const call = open(event.data.callId).find((c) => !c.started)
        if (call) call.started = true
        break
      }
      case 'tool/result': {
        const call = open(event.data.message.callId)[0]
        if (call) pending.delete(call.identity)
        break
      }
    }
  }
  const append: SessionEvent[] = []
  const repairs: Repair[] = []
  const push = <K extends keyof SessionEventMap & string>(type: K, data: SessionEventMap[K]) => {
    append.push(Object.freeze({ type, seq: events.length + append.length, time, data }) as SessionEvent)
  }
  for (const call of pending.values()) {
    const outcome = call.started || !markers ? 'unknown' : 'not-started'
    const text = call.started ? REPAIR_TEXT.unknown : markers ? REPAIR_TEXT.notStarted : REPAIR_TEXT.unmarked
    const message: ToolMessage = {
      role: 'tool',
      callId: call.callId,
      name: call.name,
      content: [{ type: 'text', text }],
      isError: true,
    }
    push('tool/result', {
      message,
      error: { code: outcome === 'unknown' ? 'INTERRUPTED_UNKNOWN' : 'INTERRUPTED_NOT_STARTED', message: text },
      meta: { repair: 'crash', outcome },
    })
    repairs.push({ kind: 'tool-result', callId: call.callId, name: call.name, outcome })
  }
  if (openStep) {
    push('step/end', { turn: openStep.turn, step: openStep.step, finish: 'error' })
    repairs.push({ kind: 'step-end', turn: openStep.turn, step: openStep.step })
  }
  if (openTurn !== undefined) {
    push('turn/end', {
      turn: openTurn,
      reason: 'interrupted',
      error: { code: 'INTERRUPTED', message: 'the process ended before the turn finished' },
    })
    repairs.push({ kind: 'turn-end', turn: openTurn })
  }
  return { append, repairs }
}

/** Human-readable lines for `LoadedSession.warnings`. */
export function describeRepairs(sessionId: string, repairs: readonly Repair[]): string[] {
  return repairs.map((repair) => {
    switch (repair.kind) {
      case 'tool-result':
        return `session ${sessionId}: tool call ${repair.callId} (${repair.name}) had no result; answered as ${repair.outcome === 'unknown' ? 'outcome unknown' : 'never started'}`
      case 'step-end':
        return `session ${sessionId}: closed open step ${repair.step} of turn ${repair.turn}`
      case 'turn-end':
        return `session ${sessionId}: closed open turn ${repair.turn} as interrupted`
      default:
        // Unreachable: the switch covers every Repair kind, and tsc fails here when one is added.
        return repair satisfies never
    }
  })
}
