import { describe, expect, it } from 'vitest'
import { BlockAssembler, LlmError, type StreamChunk } from '../src/index.ts'

const usage = (input: number, output: number) => ({ input, output, cacheRead: 0, cacheWrite: 0, reasoning: 0 })

function protocolError(fn: () => void): LlmError {
  try {
    fn()
  } catch (error) {
    expect(LlmError.is(error)).toBe(true)
    expect((error as LlmError).code).toBe('PROTOCOL')
    return error as LlmError
  }
  throw new Error('expected a PROTOCOL error')
}

describe('BlockAssembler', () => {
  it('merges text and reasoning deltas per run, in arrival order', () => {
    const a = BlockAssembler.fold([
      { kind: 'reasoning-delta', text: 'think ' },
      { kind: 'reasoning-delta', text: 'hard' },
      { kind: 'text-delta', text: 'Hello, ' },
      { kind: 'text-delta', text: 'world' },
      { kind: 'reasoning-delta', text: 'again', signature: 'sig-1' },
      { kind: 'text-delta', text: '!' },
      { kind: 'finish', reason: 'stop' },
    ])
    expect(a.snapshot()).toEqual({
      role: 'assistant',
      content: [
        { type: 'reasoning', text: 'think hard' },
        { type: 'text', text: 'Hello, world' },
        { type: 'reasoning', text: 'again', signature: 'sig-1' },
        { type: 'text', text: '!' },
      ],
    })
    expect(a.finish).toBe('stop')
    expect(a.chunkCount).toBe(7)
  })

  it('accumulates interleaved tool calls by index at their start positions', () => {
    const chunks: StreamChunk[] = [
      { kind: 'text-delta', text: 'Reading both.' },
      { kind: 'tool-call-start', index: 0, callId: 'c0', name: 'read' },
      { kind: 'tool-call-start', index: 1, callId: 'c1', name: 'grep' },
      { kind: 'tool-call-delta', index: 1, argumentsDelta: '{"pattern"' },
      { kind: 'tool-call-delta', index: 0, argumentsDelta: '{"path":' },
      { kind: 'tool-call-delta', index: 1, argumentsDelta: ':"x"}' },
      { kind: 'tool-call-end', index: 1 },
      { kind: 'tool-call-delta', index: 0, argumentsDelta: '"a.ts"}' },
      { kind: 'tool-call-end', index: 0 },
      { kind: 'usage', usage: usage(10, 5) },
      { kind: 'finish', reason: 'tool-calls' },
    ]
    const a = BlockAssembler.fold(chunks)
    expect(a.result()).toEqual({
      message: {
        role: 'assistant',
        content: [
          { type: 'text', text: 'Reading both.' },
          { type: 'tool-call', callId: 'c0', name: 'read', arguments: '{"path":"a.ts"}' },
          { type: 'tool-call', callId: 'c1', name: 'grep', arguments: '{"pattern":"x"}' },
        ],
      },
      usage: usage(10, 5),
      finish: 'tool-calls',
    })
    expect(a.completedToolCalls().map((c) => c.callId)).toEqual(['c0', 'c1'])
    expect(a.hasOpenToolCalls()).toBe(false)
  })

  it('treats each usage chunk as replacing the previous one', () => {
    const a = BlockAssembler.fold([
      { kind: 'usage', usage: usage(10, 1) },
      { kind: 'usage', usage: usage(10, 7) },
    ])
    expect(a.usage).toEqual(usage(10, 7))
  })

  it('omits usage and finish from result() when none arrived', () => {
    const a = BlockAssembler.fold([{ kind: 'text-delta', text: 'hi' }])
    expect(a.result()).toEqual({ message: { role: 'assistant', content: [{ type: 'text', text: 'hi' }] } })
    expect(Object.keys(a.result())).toEqual(['message'])
  })

  it('snapshot includes a partial tool call; finalizeInterrupted drops it', () => {
    const a = BlockAssembler.fold([
      { kind: 'text-delta', text: 'Let me look.' },
      { kind: 'tool-call-start', index: 0, callId: 'done', name: 'read' },
      { kind: 'tool-call-delta', index: 0, argumentsDelta: '{}' },
      { kind: 'tool-call-end', index: 0 },
      { kind: 'tool-call-start', index: 1, callId: 'partial', name: 'write' },
      { kind: 'tool-call-delta', index: 1, argumentsDelta: '{"pa' },
    ])
    expect(a.snapshot().content.map((b) => (b.type === 'tool-call' ? b.callId : b.type))).toEqual([
      'text',
      'done',
      'partial',
    ])
    expect(a.snapshot().content[2]).toMatchObject({ arguments: '{"pa' })
    expect(a.hasOpenToolCalls()).toBe(true)
    expect(a.finalizeInterrupted()).toEqual({
      role: 'assistant',
      content: [
        { type: 'text', text: 'Let me look.' },
        { type: 'tool-call', callId: 'done', name: 'read', arguments: '{}' },
      ],
    })
    expect(a.completedToolCalls().map((c) => c.callId)).toEqual(['done'])
  })

  it('returns copies: later pushes do not change an earlier snapshot', () => {
    const a = new BlockAssembler()
    a.push({ kind: 'text-delta', text: 'a' })
    const first = a.snapshot()
    a.push({ kind: 'text-delta', text: 'b' })
    expect(first.content).toEqual([{ type: 'text', text: 'a' }])
    expect(a.snapshot().content).toEqual([{ type: 'text', text: 'ab' }])
  })

  it('ignores empty text deltas instead of opening empty blocks', () => {
    const a = BlockAssembler.fold([
      { kind: 'text-delta', text: '' },
      { kind: 'reasoning-delta', text: '' },
    ])
    expect(a.snapshot().content).toEqual([])
  })

  it('rejects a delta for an unknown index', () => {
    const a = new BlockAssembler()
    a.push({ kind: 'text-delta', text: 'x' })
    const error = protocolError(() => a.push({ kind: 'tool-call-delta', index: 3, argumentsDelta: '{}' }))
    expect(error.message).toBe('stream chunk #1: tool-call-delta for index 3, which was never started')
  })

  it('rejects a duplicate start, an end for an unknown index, and a delta after the end', () => {
    const a = new BlockAssembler()
    a.push({ kind: 'tool-call-start', index: 0, callId: 'c', name: 'n' })
    expect(protocolError(() => a.push({ kind: 'tool-call-start', index: 0, callId: 'd', name: 'n' })).message).toMatch(
      /already started/,
    )
    expect(protocolError(() => a.push({ kind: 'tool-call-end', index: 9 })).message).toMatch(/never started/)
    a.push({ kind: 'tool-call-end', index: 0 })
    expect(protocolError(() => a.push({ kind: 'tool-call-delta', index: 0, argumentsDelta: 'x' })).message).toMatch(
      /already ended/,
    )
    expect(protocolError(() => a.push({ kind: 'tool-call-end', index: 0 })).message).toMatch(/already ended/)
  })

  it('rejects malformed chunks from untyped sources', () => {
    const a = new BlockAssembler()
    expect(protocolError(() => a.push({ kind: 'bogus' } as unknown as StreamChunk)).message).toMatch(
      /unknown chunk kind "bogus"/,
    )
    expect(protocolError(() => a.push({ kind: 'tool-call-start', index: -1, callId: 'c', name: 'n' })).message).toMatch(
      /non-negative integer/,
    )
    expect(protocolError(() => a.push({ kind: 'text-delta' } as unknown as StreamChunk)).message).toMatch(
      /string `text`/,
    )
  })
})
