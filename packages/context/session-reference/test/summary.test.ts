// The summary of a referenced session: its row, opening request, compaction summary and last
// final answers, bounded; mention parsing.
import { describe, expect, it } from 'vitest'
import { mentionedSessions, summarize } from '../src/index.ts'

const row = {
  sessionId: 's1',
  cwd: '/work/p',
  title: 'Port the parser',
  createdAt: 0,
  updatedAt: Date.UTC(2026, 0, 2),
  turns: 2,
  events: 9,
  archived: false,
  status: 'stored' as const,
  queued: 0,
}
let seq = 0
const ev = (type: string, data: unknown) => ({ seq: seq++, type, time: 0, data })
const text = (t: string) => [{ type: 'text', text: t }]
const EVENTS = [
  ev('turn/start', { turn: 1 }),
  ev('user/message', { content: text('<agents>ignored</agents>'), source: { kind: 'plugin', plugin: 'x' } }),
  ev('user/message', { content: text('Port the parser to Rust'), source: { kind: 'human' } }),
  ev('assistant/message', { message: { role: 'assistant', content: text('Ported it.') } }),
  ev('turn/end', { turn: 1, reason: 'completed' }),
  ev('surface/replace', {
    fromSeq: 0,
    toSeq: 5,
    messages: [{ role: 'user', content: text('Earlier: the parser was ported.') }],
  }),
  ev('turn/start', { turn: 2 }),
  ev('user/message', { content: text('Now the tests'), source: { kind: 'human' } }),
  ev('assistant/message', { message: { role: 'assistant', content: text('Tests pass.') } }),
  ev('turn/end', { turn: 2, reason: 'completed' }),
]

describe('session-reference', () => {
  it('summarizes title, directory, opening request, compaction summary and final answers', () => {
    const s = summarize(row, EVENTS, { maxChars: 8000, answers: 3 })
    expect(s).toContain('Title: Port the parser')
    expect(s).toContain('Directory: /work/p')
    expect(s).toContain('Turns: 2; last updated 2026-01-02T00:00:00.000Z')
    expect(s).toContain('Opening request:\nPort the parser to Rust')
    expect(s).not.toContain('<agents>')
    expect(s).toContain('Summary of its earlier conversation:\nEarlier: the parser was ported.')
    expect(s).toContain('Final answer of turn 1:\nPorted it.')
    expect(s).toContain('Final answer of turn 2:\nTests pass.')
    expect(summarize(row, EVENTS, { maxChars: 8000, answers: 1 })).not.toContain('turn 1:')
  })

  it('stays within maxChars; an empty log still names the session', () => {
    const long = [ev('user/message', { content: text('x'.repeat(10_000)), source: { kind: 'human' } })]
    expect(summarize(row, long, { maxChars: 400, answers: 3 }).length).toBeLessThanOrEqual(401)
    expect(summarize({ ...row, title: undefined }, [], { maxChars: 400, answers: 3 })).toMatch(/^Title: \(untitled\)/)
  })

  it('finds @session:<id> mentions once each, at word boundaries', () => {
    expect(mentionedSessions('see @session:abc-1 and @session:abc-1, x@session:no @session:def')).toEqual([
      'abc-1',
      'def',
    ])
    expect(mentionedSessions('@src/a.ts')).toEqual([])
  })
})
