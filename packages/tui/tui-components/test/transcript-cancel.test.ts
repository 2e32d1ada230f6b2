// A call the stream started but the log never got (a cancel cut it off before it was whole, or
// the step failed) leaves no card: live, the transcript shows what a replay of the log shows.
import { describe, expect, it } from 'vitest'
import type { AnySessionEvent } from '@dsh/session'
import { markdownTheme, palette } from '../src/theme.ts'
import { Transcript } from '../src/transcript.ts'

const plain = palette({ NO_COLOR: '1' })

const asEvents = (list: Array<[string, unknown]>): AnySessionEvent[] =>
  list.map(([type, data], seq) => ({ type, seq, time: seq, data }) as AnySessionEvent)

function render(events: AnySessionEvent[], replay: boolean): string[] {
  const transcript = new Transcript(plain, markdownTheme(plain))
  for (const event of events) transcript.apply(event, replay)
  return transcript.render(100).map((l) => l.replace(/\s+$/, ''))
}

const streamedCall = (index: number, callId: string, command: string): Array<[string, unknown]> => [
  ['assistant/chunk', { chunk: { kind: 'tool-call-start', index, callId, name: 'bash' } }],
  ['assistant/chunk', { chunk: { kind: 'tool-call-delta', index, argumentsDelta: JSON.stringify({ command }) } }],
]

describe('streamed calls that never reached the log', () => {
  it('a cancel mid-call: the interrupted message keeps the text, the unfinished call has no card', () => {
    const log = asEvents([
      ['turn/start', { turn: 0 }],
      ['user/message', { content: [{ type: 'text', text: 'go' }], source: { kind: 'human' } }],
      ['step/start', { turn: 0, step: 0 }],
      ['assistant/chunk', { chunk: { kind: 'text-delta', text: 'partial-answer' } }],
      ...streamedCall(0, 'call_0_0', 'echo cut-off'),
      [
        'assistant/message',
        { message: { role: 'assistant', content: [{ type: 'text', text: 'partial-answer' }] }, interrupted: true },
      ],
      ['step/end', { turn: 0, step: 0, finish: 'error' }],
      ['turn/end', { turn: 0, reason: 'cancelled' }],
    ])
    const live = render(log, false)
    expect(live.join('\n')).toContain('partial-answer')
    expect(live.join('\n')).not.toContain('cut-off')
    expect(live).toEqual(render(log, true))
  })

  it('a failed turn reads as a sentence: "the turn failed: CODE: message"', () => {
    const log = asEvents([
      ['turn/start', { turn: 0 }],
      ['user/message', { content: [{ type: 'text', text: 'go' }], source: { kind: 'human' } }],
      [
        'turn/end',
        { turn: 0, reason: 'error', error: { code: 'MISSING_CREDENTIAL', message: 'DEEPSEEK_API_KEY is not set' } },
      ],
      ['turn/start', { turn: 1 }],
      ['turn/end', { turn: 1, reason: 'max-tokens' }],
    ])
    const text = render(log, false).join('\n')
    expect(text).toContain('⎿ the turn failed: MISSING_CREDENTIAL: DEEPSEEK_API_KEY is not set')
    expect(text).toContain('⎿ the turn stopped at the output token limit')
    expect(text).not.toMatch(/ended (error|max-tokens)/)
  })

  it('a failed step: its streamed card goes, the next step draws its own', () => {
    const log = asEvents([
      ['turn/start', { turn: 0 }],
      ['user/message', { content: [{ type: 'text', text: 'go' }], source: { kind: 'human' } }],
      ['step/start', { turn: 0, step: 0 }],
      ...streamedCall(0, 'call_0', 'echo lost'),
      ['step/end', { turn: 0, step: 0, finish: 'error' }],
      ['step/start', { turn: 0, step: 1 }],
      ['assistant/chunk', { chunk: { kind: 'text-delta', text: 'answer-after' } }],
      ['assistant/message', { message: { role: 'assistant', content: [{ type: 'text', text: 'answer-after' }] } }],
      ['step/end', { turn: 0, step: 1 }],
      ['turn/end', { turn: 0, reason: 'completed' }],
    ])
    const live = render(log, false)
    expect(live.join('\n')).not.toContain('lost')
    expect(live).toEqual(render(log, true))
  })
})
