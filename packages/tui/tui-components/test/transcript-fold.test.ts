// The transcript as a fold of the log: one card per call and one row per reasoning block, the
// same when the events stream in live and when a stored log is replayed, including logs written
// before call ids were session-unique (two turns whose first call is `call_0_0`).
import { describe, expect, it } from 'vitest'
import type { AnySessionEvent } from '@dsh/session'
import { markdownTheme, palette } from '../src/theme.ts'
import { Transcript } from '../src/transcript.ts'

const plain = palette({ NO_COLOR: '1' })

/** Events of one step as the loop logs them: chunks, the message, each call and its result. */
function step(
  turn: number,
  stepNo: number,
  opts: { reasoning?: string; text?: string; calls?: Array<{ id: string; command: string; output: string }> },
): Array<[string, unknown]> {
  const out: Array<[string, unknown]> = [['step/start', { turn, step: stepNo }]]
  const calls = opts.calls ?? []
  if (opts.reasoning) out.push(['assistant/chunk', { chunk: { kind: 'reasoning-delta', text: opts.reasoning } }])
  if (opts.text) out.push(['assistant/chunk', { chunk: { kind: 'text-delta', text: opts.text } }])
  calls.forEach((c, i) => {
    out.push(['assistant/chunk', { chunk: { kind: 'tool-call-start', index: i, callId: c.id, name: 'bash' } }])
    out.push([
      'assistant/chunk',
      { chunk: { kind: 'tool-call-delta', index: i, argumentsDelta: JSON.stringify({ command: c.command }) } },
    ])
  })
  const content = [
    ...(opts.reasoning ? [{ type: 'reasoning', text: opts.reasoning }] : []),
    ...(opts.text ? [{ type: 'text', text: opts.text }] : []),
    ...calls.map((c) => ({
      type: 'tool-call',
      callId: c.id,
      name: 'bash',
      arguments: JSON.stringify({ command: c.command }),
    })),
  ]
  out.push(['assistant/message', { message: { role: 'assistant', content } }])
  for (const c of calls)
    out.push(['tool/call', { callId: c.id, name: 'bash', arguments: JSON.stringify({ command: c.command }) }])
  for (const c of calls)
    out.push([
      'tool/result',
      { message: { role: 'tool', callId: c.id, name: 'bash', content: [{ type: 'text', text: c.output }] } },
    ])
  out.push(['step/end', { turn, step: stepNo }])
  return out
}

function turn(n: number, prompt: string, steps: Array<Parameters<typeof step>[2]>): Array<[string, unknown]> {
  return [
    ['turn/start', { turn: n }],
    ['user/message', { content: [{ type: 'text', text: prompt }], source: { kind: 'human' } }],
    ...steps.flatMap((s, i) => step(n, i, s)),
    ['turn/end', { turn: n, reason: 'completed' }],
  ]
}

const asEvents = (list: Array<[string, unknown]>): AnySessionEvent[] =>
  list.map(([type, data], seq) => ({ type, seq, time: seq, data }) as AnySessionEvent)

function render(events: AnySessionEvent[], replay: boolean): string[] {
  const transcript = new Transcript(plain, markdownTheme(plain))
  for (const event of events) transcript.apply(event, replay)
  return transcript.render(100).map((l) => l.replace(/\s+$/, ''))
}

/** The rows that name a call, a result, a reasoning block or an answer, in screen order. */
const items = (lines: string[]) =>
  lines.filter((l) => /Thinking|Thought|echo |out-|answer-/.test(l)).map((l) => l.trim())

describe('transcript fold', () => {
  // Two turns reusing call_0_0, as a log written before identities were session-unique.
  const log = asEvents([
    ...turn(0, 'first', [
      { reasoning: 'plan one', calls: [{ id: 'call_0_0', command: 'echo one', output: 'out-one' }] },
      { text: 'answer-one' },
    ]),
    ...turn(1, 'second', [
      { reasoning: 'plan two', calls: [{ id: 'call_0_0', command: 'echo two', output: 'out-two' }] },
      { text: 'answer-two' },
    ]),
  ])

  it('draws one card per call with its own result when two turns reuse an id', () => {
    for (const replay of [false, true]) {
      const shown = items(render(log, replay)).join('\n')
      expect(shown.match(/echo one/g)?.length, `replay=${replay}\n${shown}`).toBe(1)
      expect(shown.match(/echo two/g)?.length, `replay=${replay}\n${shown}`).toBe(1)
      expect(shown.indexOf('echo one')).toBeLessThan(shown.indexOf('out-one'))
      expect(shown.indexOf('out-one')).toBeLessThan(shown.indexOf('answer-one'))
      expect(shown.indexOf('answer-one')).toBeLessThan(shown.indexOf('echo two'))
      expect(shown.indexOf('echo two')).toBeLessThan(shown.indexOf('out-two'))
    }
  })

  it('shows each reasoning block as one finished row above its call, live as replayed', () => {
    const live = items(render(log, false))
    const replayed = items(render(log, true))
    expect(live.filter((l) => /Thinking/.test(l))).toEqual([])
    expect(live.filter((l) => /Thought/.test(l))).toHaveLength(2)
    expect(live).toEqual(replayed)
    expect(live.findIndex((l) => /Thought/.test(l))).toBeLessThan(live.findIndex((l) => /echo one/.test(l)))
  })
})
