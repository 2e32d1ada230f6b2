import { describe, expect, it } from 'vitest'
import { Session, type AnySessionEvent } from '@dsh/session'
import { emptyUsage } from '@dsh/llm'
import type { TurnResult } from '@dsh/agent'
import {
  diffHunks,
  planEntries,
  promptToBlocks,
  PromptContentError,
  stopReason,
  toolLocations,
  toolTitle,
  Translator,
  DEFAULT_TOOL_KINDS,
} from '../src/index.ts'

const result = (reason: TurnResult['reason'], error?: TurnResult['error']): TurnResult => ({
  turn: 0,
  reason,
  text: '',
  usage: emptyUsage(),
  steps: 1,
  ...(error ? { error } : {}),
})

describe('stopReason', () => {
  it('maps every turn end the protocol can express', () => {
    expect(stopReason(result('completed'))).toBe('end_turn')
    expect(stopReason(result('completed'), 'refusal')).toBe('refusal')
    expect(stopReason(result('completed'), 'content-filter')).toBe('refusal')
    expect(stopReason(result('max-tokens'))).toBe('max_tokens')
    expect(stopReason(result('blocked', { code: 'MAX_STEPS', message: 'limit' }))).toBe('max_turn_requests')
    expect(stopReason(result('cancelled'))).toBe('cancelled')
    expect(stopReason(result('interrupted'))).toBe('cancelled')
    expect(stopReason(result('error', { code: 'REFUSAL', message: 'no' }))).toBe('refusal')
  })
  it('leaves failures to an error response', () => {
    expect(stopReason(result('error', { code: 'SERVER', message: 'down' }))).toBeUndefined()
    expect(stopReason(result('blocked', { code: 'CHECKPOINT_FAILED', message: 'disk' }))).toBeUndefined()
  })
})

describe('promptToBlocks', () => {
  it('keeps text, references links and wraps embedded text resources', () => {
    const blocks = promptToBlocks(
      [
        { type: 'text', text: 'fix it' },
        { type: 'resource_link', name: 'a.ts', uri: 'file:///w/a.ts', mimeType: 'text/x-typescript' },
        { type: 'resource', resource: { uri: 'file:///w/b.ts', text: 'let b = 2' } },
        { type: 'resource', resource: { uri: 'file:///w/c.bin', blob: 'AAAA', mimeType: 'application/octet-stream' } },
      ],
      { images: false },
    )
    expect(blocks).toEqual([
      { type: 'text', text: 'fix it' },
      { type: 'text', text: '[Referenced resource: a.ts <file:///w/a.ts> (text/x-typescript)]' },
      { type: 'text', text: '<resource uri="file:///w/b.ts">\nlet b = 2\n</resource>' },
      { type: 'text', text: '[Attached binary resource file:///w/c.bin (application/octet-stream): not shown]' },
    ])
  })
  it('refuses images unless enabled, audio always, and an empty prompt', () => {
    const image = { type: 'image' as const, data: 'AAAA', mimeType: 'image/png' }
    expect(() => promptToBlocks([image], { images: false })).toThrow(PromptContentError)
    expect(promptToBlocks([image], { images: true })).toEqual([{ type: 'image', data: 'AAAA', mediaType: 'image/png' }])
    expect(() => promptToBlocks([{ type: 'audio', data: 'AAAA', mimeType: 'audio/wav' }], { images: true })).toThrow(
      /audio content is not accepted/,
    )
    expect(() => promptToBlocks([], { images: false })).toThrow(/empty/)
  })
})

describe('tool presentation', () => {
  it('titles from the description argument, else a summary', () => {
    expect(toolTitle('bash', { command: 'ls -la', description: 'List files' })).toBe('List files')
    expect(toolTitle('bash', { command: 'ls -la\necho 2' })).toBe('ls -la')
    expect(toolTitle('read', { file_path: 'src/a.ts' })).toBe('read src/a.ts')
    expect(toolTitle('grep', { pattern: 'TODO', path: 'src' })).toBe('grep TODO in src')
    expect(toolTitle('mystery', {})).toBe('mystery')
  })
  it('locations are absolute, with the read offset as the line', () => {
    expect(toolLocations({ file_path: 'a.ts', offset: 10 }, '/w')).toEqual([{ path: '/w/a.ts', line: 10 }])
    expect(toolLocations({ path: '/abs/b' }, '/w')).toEqual([{ path: '/abs/b' }])
    expect(toolLocations({ command: 'ls' }, '/w')).toEqual([])
  })
  it('splits a unified diff into one diff per hunk', () => {
    const unified =
      '--- a/f\n+++ b/f\n@@ -1,3 +1,3 @@\n one\n-two\n+TWO\n three\n@@ -10,2 +10,2 @@\n ten\n-eleven\n+ELEVEN\n\\ No newline at end of file\n'
    expect(diffHunks('/w/f', unified)).toEqual([
      { type: 'diff', path: '/w/f', oldText: 'one\ntwo\nthree', newText: 'one\nTWO\nthree' },
      { type: 'diff', path: '/w/f', oldText: 'ten\neleven', newText: 'ten\nELEVEN' },
    ])
  })
  it('plan entries from todo shapes', () => {
    expect(
      planEntries([
        { content: 'write tests', status: 'in_progress', priority: 'high' },
        { text: 'ship', done: true },
        { title: 'later' },
        { nothing: true },
      ]),
    ).toEqual([
      { content: 'write tests', status: 'in_progress', priority: 'high' },
      { content: 'ship', status: 'completed', priority: 'medium' },
      { content: 'later', status: 'pending', priority: 'medium' },
    ])
    expect(planEntries('junk')).toEqual([])
  })
})

describe('Translator', () => {
  const make = () =>
    new Translator({ sessionId: 's', cwd: '/w', toolKinds: DEFAULT_TOOL_KINDS, maxToolOutputChars: 10 })
  const events = (build: (s: Session) => void): AnySessionEvent[] => {
    const s = new Session({ cwd: '/w' })
    build(s)
    return [...s.events]
  }

  it('streams deltas live and does not repeat them from the final message', () => {
    const t = make()
    const log = events((s) => {
      s.append('step/start', { turn: 0, step: 0 })
      s.append('assistant/chunk', { chunk: { kind: 'reasoning-delta', text: 'hm' } })
      s.append('assistant/chunk', { chunk: { kind: 'text-delta', text: 'Hi' } })
      s.append('assistant/message', {
        message: {
          role: 'assistant',
          content: [
            { type: 'reasoning', text: 'hm' },
            { type: 'text', text: 'Hi' },
          ],
        },
      })
    })
    expect(log.flatMap((e) => t.translate(e)).map((u) => u.sessionUpdate)).toEqual([
      'agent_thought_chunk',
      'agent_message_chunk',
    ])
  })

  it('shows a message that was never streamed', () => {
    const t = make()
    const log = events((s) => {
      s.append('step/start', { turn: 0, step: 0 })
      s.append('assistant/message', { message: { role: 'assistant', content: [{ type: 'text', text: 'whole' }] } })
    })
    expect(log.flatMap((e) => t.translate(e))).toEqual([
      { sessionUpdate: 'agent_message_chunk', content: { type: 'text', text: 'whole' } },
    ])
  })

  it('replay shows human messages and whole assistant messages, never chunks or injected context', () => {
    const t = make()
    const log = events((s) => {
      s.append('user/message', { content: [{ type: 'text', text: 'q' }], source: { kind: 'human' } })
      s.append('user/message', { content: [{ type: 'text', text: 'ctx' }], source: { kind: 'plugin', plugin: 'x' } })
      s.append('assistant/chunk', { chunk: { kind: 'text-delta', text: 'a' } })
      s.append('assistant/message', { message: { role: 'assistant', content: [{ type: 'text', text: 'a' }] } })
    })
    expect(log.flatMap((e) => t.translate(e, true))).toEqual([
      { sessionUpdate: 'user_message_chunk', content: { type: 'text', text: 'q' } },
      { sessionUpdate: 'agent_message_chunk', content: { type: 'text', text: 'a' } },
    ])
  })

  it('maps tool results: clipped text, failures, created files as diffs, captured diffs first', () => {
    const t = make()
    const log = events((s) => {
      s.append('tool/call', { callId: 'c1', name: 'bash', arguments: '{"command":"seq 100"}' })
      s.append('tool/result', {
        message: { role: 'tool', callId: 'c1', name: 'bash', content: [{ type: 'text', text: '1\n2\n3\n4\n5\n6\n7' }] },
      })
      s.append('tool/call', { callId: 'c2', name: 'write', arguments: '{"file_path":"n.txt","content":"new"}' })
      s.append('tool/result', {
        message: { role: 'tool', callId: 'c2', name: 'write', content: [{ type: 'text', text: 'Created' }] },
        meta: { path: '/w/n.txt', created: true },
      })
      s.append('tool/call', { callId: 'c3', name: 'edit', arguments: 'not json' })
      s.append('tool/result', {
        message: { role: 'tool', callId: 'c3', name: 'edit', content: [{ type: 'text', text: 'bad' }], isError: true },
        error: { code: 'INVALID_JSON', message: 'bad' },
      })
      s.append('tool/call', { callId: 'c4', name: 'edit', arguments: '{"file_path":"/w/e"}' })
      s.append('tool/result', {
        message: { role: 'tool', callId: 'c4', name: 'edit', content: [{ type: 'text', text: 'Edited' }] },
        meta: { path: '/w/e', diff: '@@ -1 +1 @@\n-x\n+y\n' },
      })
    })
    t.captureDiff('c4', { path: '/w/e', oldText: 'x\n', newText: 'y\n' })
    const out = log.flatMap((e) => t.translate(e))
    expect(out[0]).toMatchObject({ sessionUpdate: 'tool_call', kind: 'execute', title: 'seq 100', status: 'pending' })
    expect(out[1]).toMatchObject({
      status: 'completed',
      content: [
        {
          type: 'content',
          content: {
            type: 'text',
            text: expect.stringMatching(/^1\n2\n3\n4\n5\n\n… \[3 more characters not shown\]$/),
          },
        },
      ],
    })
    expect(out[3]).toMatchObject({
      status: 'completed',
      content: [{ type: 'diff', path: '/w/n.txt', oldText: null, newText: 'new' }],
    })
    expect(out[4]).toMatchObject({ sessionUpdate: 'tool_call', title: 'edit', rawInput: {} })
    expect(out[5]).toMatchObject({ status: 'failed', rawOutput: { error: { code: 'INVALID_JSON' } } })
    expect(out[7]).toMatchObject({ content: [{ type: 'diff', path: '/w/e', oldText: 'x\n', newText: 'y\n' }] })
  })
})

describe('compaction reporting', () => {
  const ev = (seq: number, type: string, data: unknown) => ({ type, seq, time: 0, data }) as unknown as AnySessionEvent
  it('reports a compaction as agent message chunks, live only', () => {
    const t = new Translator({ sessionId: 's', cwd: '/w', toolKinds: DEFAULT_TOOL_KINDS, maxToolOutputChars: 10 })
    const chunks = (u: unknown[]) => u.map((x) => (x as { content: { text: string } }).content.text)
    expect(chunks(t.translate(ev(1, 'compaction/start', { id: 'c1', reason: 'auto', tokensBefore: 90000 })))).toEqual([
      '\n[compacting the conversation (auto)...]\n',
    ])
    expect(chunks(t.translate(ev(2, 'compaction/summary', { id: 'c1', text: 'secret summary' })))).toEqual([])
    expect(chunks(t.translate(ev(3, 'compaction/end', { id: 'c1', status: 'compacted', tokensAfter: 12000 })))).toEqual(
      ['[conversation compacted: ~90000 -> ~12000 tokens]\n'],
    )
    expect(
      chunks(t.translate(ev(4, 'compaction/end', { id: 'c2', status: 'failed', error: { message: 'empty summary' } }))),
    ).toEqual(['[compaction failed: empty summary; history unchanged]\n'])
    expect(t.translate(ev(5, 'compaction/start', { id: 'c3', reason: 'manual' }), true)).toEqual([])
  })
})

describe('toolCallId', () => {
  it('is unique in the session when an old log repeats a call id, and a result updates its own call', () => {
    const translator = new Translator({
      sessionId: 's',
      cwd: '/w',
      toolKinds: DEFAULT_TOOL_KINDS,
      maxToolOutputChars: 1000,
    })
    let seq = 0
    const ev = (type: string, data: unknown) => ({ type, seq: seq++, time: 0, data }) as AnySessionEvent
    const updates = [
      ev('tool/call', { callId: 'call_0_0', name: 'bash', arguments: '{"command":"echo one"}' }),
      ev('tool/result', {
        message: { role: 'tool', callId: 'call_0_0', name: 'bash', content: [{ type: 'text', text: 'one' }] },
      }),
      ev('tool/call', { callId: 'call_0_0', name: 'bash', arguments: '{"command":"echo two"}' }),
      ev('tool/result', {
        message: { role: 'tool', callId: 'call_0_0', name: 'bash', content: [{ type: 'text', text: 'two' }] },
      }),
    ].flatMap((event) => translator.translate(event, true)) as Array<{ sessionUpdate: string; toolCallId?: string }>
    expect(updates.map((u) => [u.sessionUpdate, u.toolCallId])).toEqual([
      ['tool_call', 'call_0_0'],
      ['tool_call_update', 'call_0_0'],
      ['tool_call', 'call_0_0-2'],
      ['tool_call_update', 'call_0_0-2'],
    ])
  })
})
