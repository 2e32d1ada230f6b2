// One card per call even when a log repeats a call id across steps (logs written before the agent
// loop made ids session-unique; providers that number calls per response): live and refolded.
import { describe, expect, it } from 'vitest'
import type { WireEvent } from '@dsh/web-protocol'
import { foldConversation, type ToolNode } from '../src/index.ts'

function log(withChunks: boolean): WireEvent[] {
  const list: Array<[string, unknown]> = []
  for (const [turn, word] of [
    [0, 'one'],
    [1, 'two'],
  ] as const) {
    const args = JSON.stringify({ command: `echo ${word}` })
    list.push(
      ['turn/start', { turn }],
      ['user/message', { content: [{ type: 'text', text: word }], source: { kind: 'human' } }],
    )
    list.push(['step/start', { turn, step: 0 }])
    if (withChunks) {
      list.push(['assistant/chunk', { chunk: { kind: 'reasoning-delta', text: `plan ${word}` } }])
      list.push(['assistant/chunk', { chunk: { kind: 'tool-call-start', index: 0, callId: 'call_0_0', name: 'bash' } }])
      list.push(['assistant/chunk', { chunk: { kind: 'tool-call-delta', index: 0, argumentsDelta: args } }])
    }
    list.push([
      'assistant/message',
      {
        message: {
          role: 'assistant',
          content: [
            { type: 'reasoning', text: `plan ${word}` },
            { type: 'tool-call', callId: 'call_0_0', name: 'bash', arguments: args },
          ],
        },
      },
    ])
    list.push(['tool/call', { callId: 'call_0_0', name: 'bash', arguments: args }])
    list.push([
      'tool/result',
      { message: { role: 'tool', callId: 'call_0_0', name: 'bash', content: [{ type: 'text', text: `out ${word}` }] } },
    ])
    list.push(['step/end', { turn, step: 0 }], ['step/start', { turn, step: 1 }])
    list.push([
      'assistant/message',
      { message: { role: 'assistant', content: [{ type: 'text', text: `answer ${word}` }] } },
    ])
    list.push(['step/end', { turn, step: 1 }], ['turn/end', { turn, reason: 'completed' }])
  }
  return list.map(([type, data], seq) => ({ type, seq, time: seq, data }) as WireEvent)
}

describe('tool cards keyed by the log', () => {
  for (const withChunks of [true, false]) {
    it(`draws both turns' calls, each with its own result (${withChunks ? 'live' : 'refolded'})`, () => {
      const snap = foldConversation(log(withChunks))
      const tools = snap.nodes.filter((n): n is ToolNode => n.kind === 'tool')
      expect(tools.map((t) => [t.input, t.status, t.result?.text])).toEqual([
        [{ command: 'echo one' }, 'done', 'out one'],
        [{ command: 'echo two' }, 'done', 'out two'],
      ])
      expect(new Set(snap.nodes.map((n) => n.key)).size).toBe(snap.nodes.length)
      expect(snap.nodes.map((n) => n.kind)).toEqual([
        'user',
        'thinking',
        'tool',
        'assistant',
        'user',
        'thinking',
        'tool',
        'assistant',
      ])
    })
  }
})
