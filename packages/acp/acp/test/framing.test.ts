// The stdio frame guard in front of the ACP SDK reader, fed real byte chunks.
import { describe, expect, it } from 'vitest'
import { guardFrames, wrongVersionReply } from '../src/framing.ts'

const enc = new TextEncoder()

async function run(chunks: string[], maxMessageBytes: number) {
  const input = new ReadableStream<Uint8Array>({
    start(c) {
      for (const chunk of chunks) c.enqueue(enc.encode(chunk))
      c.close()
    },
  })
  const replies: unknown[] = []
  const warnings: string[] = []
  const out = guardFrames(input, {
    maxMessageBytes,
    reply: (f) => void replies.push(JSON.parse(f)),
    warn: (w) => void warnings.push(w),
  })
  let text = ''
  const dec = new TextDecoder()
  for await (const chunk of out as unknown as AsyncIterable<Uint8Array>) text += dec.decode(chunk, { stream: true })
  return { passed: text, replies, warnings }
}

describe('guardFrames', () => {
  it('passes ordinary lines through unchanged, split or joined across chunks', async () => {
    const r = await run(
      [
        '{"jsonrpc":"2.0","id":1,',
        '"method":"a"}\n{"jsonrpc":"2.0","method":"b"}\r\n',
        'not json\n',
        '{"jsonrpc":"2.0","id":2}',
      ],
      100,
    )
    expect(r.passed).toBe(
      '{"jsonrpc":"2.0","id":1,"method":"a"}\n{"jsonrpc":"2.0","method":"b"}\r\nnot json\n{"jsonrpc":"2.0","id":2}\n',
    )
    expect(r.replies).toEqual([])
    expect(r.warnings).toEqual([])
  })

  it('drops a line over the limit, answers it once with id null, and keeps serving', async () => {
    const big = '{"jsonrpc":"2.0","id":5,"method":"x","params":"' + 'p'.repeat(60) + '"}'
    const r = await run(
      [big.slice(0, 30), big.slice(30), '\n{"jsonrpc":"2.0","id":6,"method":"y"}\n', 'q'.repeat(70) + '\n'],
      50,
    )
    expect(r.passed).toBe('{"jsonrpc":"2.0","id":6,"method":"y"}\n')
    expect(r.replies).toEqual([
      {
        jsonrpc: '2.0',
        id: null,
        error: {
          code: -32600,
          message: 'Invalid Request: message longer than 50 bytes',
          data: { maxMessageBytes: 50 },
        },
      },
      {
        jsonrpc: '2.0',
        id: null,
        error: {
          code: -32600,
          message: 'Invalid Request: message longer than 50 bytes',
          data: { maxMessageBytes: 50 },
        },
      },
    ])
    expect(r.warnings).toHaveLength(2)
    expect(r.warnings[0]).toMatch(/longer than 50 bytes/)
  })

  it('answers a request with the wrong jsonrpc version with -32600 and its own id', async () => {
    const r = await run(
      [
        '{"jsonrpc":"1.0","id":7,"method":"initialize"}\n{"id":"s","method":"m"}\n{"jsonrpc":"2.0","id":8,"method":"ok"}\n',
      ],
      1000,
    )
    expect(r.passed).toBe('{"jsonrpc":"2.0","id":8,"method":"ok"}\n')
    expect(r.replies).toMatchObject([
      { jsonrpc: '2.0', id: 7, error: { code: -32600 } },
      { jsonrpc: '2.0', id: 's', error: { code: -32600 } },
    ])
  })

  it('leaves notifications, responses and unparsable text to the SDK', () => {
    expect(wrongVersionReply('{"jsonrpc":"1.0","method":"note"}')).toBeUndefined()
    expect(wrongVersionReply('{"jsonrpc":"1.0","id":1,"result":{}}')).toBeUndefined()
    expect(wrongVersionReply('{oops')).toBeUndefined()
    expect(wrongVersionReply('[1,2]')).toBeUndefined()
    expect(wrongVersionReply('{"jsonrpc":"2.0","id":1,"method":"m"}')).toBeUndefined()
  })
})
