// Event-log fixtures for persistence tests (no test-runner imports: child processes use them too).
import type { SessionEvent, SessionEventMap, SessionEventType } from '@dsh/session'
import { Session } from '@dsh/session'

/** Builds events with contiguous seq through a real Session (so payloads are validated). */
export function eventLog(cwd = '/work/project') {
  let time = 1_700_000_000_000
  const session = new Session({ cwd, clock: () => time++ })
  return {
    session,
    add<K extends SessionEventType>(type: K, data: SessionEventMap[K]): SessionEvent<K> {
      return session.append(type, data)
    },
  }
}

/** A small complete turn with a tool call, appended to `log`. */
export function completeTurn(log: ReturnType<typeof eventLog>, turn: number, prompt = `prompt ${turn}`): void {
  const callId = `call-${turn}`
  log.add('turn/start', { turn })
  log.add('step/start', { turn, step: 0 })
  log.add('user/message', { content: [{ type: 'text', text: prompt }], source: { kind: 'human' } })
  log.add('assistant/chunk', { chunk: { kind: 'text-delta', text: 'ok' } })
  log.add('assistant/message', {
    message: {
      role: 'assistant',
      content: [
        { type: 'text', text: 'ok' },
        { type: 'tool-call', callId, name: 'read', arguments: '{}' },
      ],
    },
  })
  log.add('tool/call', { callId, name: 'read', arguments: '{}' })
  log.add('tool/result', {
    message: { role: 'tool', callId, name: 'read', content: [{ type: 'text', text: 'contents' }] },
  })
  log.add('step/end', { turn, step: 0 })
  log.add('turn/end', { turn, reason: 'completed' })
}
