// The incremental request body: its bytes must equal a fresh full serialisation of the same
// request on every request (appends, a compaction, an edited tool result, a restored session,
// a message mutated in place), while the bytes of unchanged history messages are reused.
import { describe, expect, it } from 'vitest'
import type { LlmRequest, Message, ToolSchema } from '@dsh/llm'
import { BodyEncoder, buildRequestBody, concatBody, defaultEffortTable, type BodyOptions } from '../src/index.ts'

function deepFreeze<T>(value: T): T {
  if (value && typeof value === 'object') {
    for (const key of Object.keys(value)) deepFreeze((value as Record<string, unknown>)[key])
    Object.freeze(value)
  }
  return value
}

const user = (text: string): Message => deepFreeze({ role: 'user', content: [{ type: 'text', text }] })
const call = (id: string, path: string): Message =>
  deepFreeze({
    role: 'assistant',
    content: [
      { type: 'reasoning', text: `I will read ${path}.` },
      { type: 'tool-call', callId: id, name: 'read', arguments: JSON.stringify({ file_path: path }) },
    ],
  })
const result = (id: string, text: string): Message =>
  deepFreeze({ role: 'tool', callId: id, name: 'read', content: [{ type: 'text', text }] })

const tools: ToolSchema[] = [
  { name: 'read', description: 'reads a file', parameters: { type: 'object', properties: { file_path: {} } } },
]
const options: BodyOptions = { maxTokens: 1000, efforts: defaultEffortTable() }

const request = (messages: Message[], extra: Partial<LlmRequest> = {}): LlmRequest => ({
  provider: 'deepseek-official',
  model: 'deepseek-v4-flash',
  system: 'You are a test. ✓ «quotes» "and" \\ backslashes',
  messages,
  tools,
  ...extra,
})

/** The encoder's bytes for `req`, checked against a fresh full serialisation. */
function sent(encoder: BodyEncoder, req: LlmRequest, opts: BodyOptions = options) {
  const body = encoder.encode(req, opts)
  const fresh = Buffer.from(JSON.stringify(buildRequestBody(req, opts)), 'utf8')
  const bytes = Buffer.from(concatBody(body))
  expect(body.length).toBe(bytes.byteLength)
  expect(bytes.toString('utf8')).toBe(fresh.toString('utf8'))
  expect(bytes.equals(fresh)).toBe(true)
  return body
}

describe('BodyEncoder', () => {
  it('matches a fresh serialisation across appends, a compaction, an edited result and a restore', () => {
    const encoder = new BodyEncoder()
    const history: Message[] = [user('read every module, 日本語 and emoji 🙂')]
    sent(encoder, request(history))
    for (let i = 0; i < 6; i++) {
      history.push(call(`c${i}`, `m${i}.ts`), result(`c${i}`, `line ${i}\n`.repeat(20 + i)))
      sent(encoder, request(history))
    }
    // A compaction: a summary replaces the middle; the head and the recent messages stay.
    const compacted = [history[0], user('[Context compacted] summary of m0..m3'), ...history.slice(9)]
    sent(encoder, request(compacted))
    // A rewritten tool result (as the pruner does): same call id, another message object.
    compacted[compacted.length - 1] = result('c5', 'line 5 [... omitted ...]')
    sent(encoder, request(compacted))
    compacted.push(call('c6', 'm6.ts'), result('c6', 'six'))
    sent(encoder, request(compacted))
    // A restored session: equal content, new objects (read back from the log).
    const restored = compacted.map((m) => deepFreeze(structuredClone(m)))
    sent(encoder, request(restored))
    restored.push(call('c7', 'm7.ts'), result('c7', 'seven'))
    sent(encoder, request(restored))
  })

  it('reuses the bytes of messages an earlier request carried, and encodes only the new ones', () => {
    const encoder = new BodyEncoder()
    const history = [user('go'), call('c0', 'a'), result('c0', 'A')]
    const first = sent(encoder, request(history))
    history.push(call('c1', 'b'), result('c1', 'B'))
    const second = sent(encoder, request(history))
    // chunks: head + system, then one per message, then the tail.
    expect(second.chunks).toHaveLength(history.length + 3)
    for (let i = 2; i < 5; i++) expect(second.chunks[i]).toBe(first.chunks[i])
    expect(encoder.size).toBe(5)
  })

  it('joins long runs into blocks, and splits a block whose messages changed', () => {
    const encoder = new BodyEncoder()
    const history: Message[] = [user('go')]
    for (let i = 0; i < 100; i++) history.push(call(`c${i}`, `m${i}`), result(`c${i}`, `r${i} ✓`))
    const first = sent(encoder, request(history))
    expect(first.chunks).toHaveLength(history.length + 3)
    // 201 messages: three blocks of 64 and 9 single ones, between the head and the tail.
    const second = sent(encoder, request(history))
    expect(second.chunks).toHaveLength(2 + 3 + 9 + 1)
    expect(encoder.size).toBe(201)
    // A result rewritten inside the second block; then a compaction keeping a tail that starts
    // inside the third block; then the same object twice in a row, as a run of its own.
    history[100] = result('c49', 'pruned')
    sent(encoder, request(history))
    sent(encoder, request(history))
    const tail = history.slice(150)
    sent(encoder, request([history[0], user('summary'), ...tail]))
    sent(encoder, request([history[0], user('summary'), ...tail]))
    const same = user('again')
    const repeated = Array.from({ length: 150 }, () => same)
    sent(encoder, request(repeated))
    sent(encoder, request(repeated))
    sent(encoder, request([...repeated.slice(1), history[3]], { system: undefined }))
  })

  it('encodes a message that is not frozen every time, so changing it in place is sent', () => {
    const encoder = new BodyEncoder()
    const loose: Message = { role: 'tool', callId: 'c0', name: 'read', content: [{ type: 'text', text: 'before' }] }
    const history = [user('go'), call('c0', 'a'), loose]
    sent(encoder, request(history))
    ;(loose.content[0] as { text: string }).text = 'after'
    expect(Buffer.from(concatBody(sent(encoder, request(history)))).toString()).toContain('"after"')
    // A frozen message whose block is still mutable is not cached either.
    const shallow = Object.freeze({ role: 'user', content: Object.freeze([{ type: 'text', text: 'one' }]) }) as Message
    sent(encoder, request([shallow]))
    ;(shallow.content[0] as { text: string }).text = 'two'
    sent(encoder, request([shallow]))
    // Nor is one whose field is a getter.
    let label = 'one'
    const getter = deepFreeze({
      role: 'user',
      content: [
        Object.freeze({
          type: 'text',
          get text() {
            return label
          },
        }),
      ],
    }) as unknown as Message
    sent(encoder, request([getter]))
    label = 'two'
    sent(encoder, request([getter]))
  })

  it('handles no system prompt, no tools, efforts, images and odd characters', () => {
    const encoder = new BodyEncoder()
    const image = deepFreeze({
      role: 'user',
      content: [
        { type: 'text', text: 'what is this \u2028\u2029 \ud800 lone surrogate' },
        { type: 'image', mediaType: 'image/png', data: 'AAAA' },
      ],
    }) as Message
    const history = [image, call('c0', 'x'), result('c0', '\u0000 nul and \u001f')]
    sent(encoder, request(history, { system: undefined }))
    sent(encoder, request(history, { system: '', tools: [] }))
    sent(encoder, request(history, { reasoningEffort: 'high', maxTokens: 7 }))
    sent(encoder, request([], { system: undefined }))
    sent(encoder, request([]))
  })

  it('falls back to one whole serialisation when the body fields hide or imitate the messages', () => {
    const encoder = new BodyEncoder()
    const history = [user('go'), call('c0', 'a'), result('c0', 'A')]
    const efforts = { ...defaultEffortTable(), low: { messages: [{ role: 'user', content: 'replaced' }] } }
    const replaced = sent(encoder, request(history, { reasoningEffort: 'low' }), { efforts })
    expect(replaced.chunks).toHaveLength(1)
    const imitated = sent(encoder, request(history, { model: '\u0000dsh-llm-deepseek:messages\u0000' }))
    expect(imitated.chunks).toHaveLength(1)
  })

  it('drops the bytes of messages that recent requests no longer carry', () => {
    const encoder = new BodyEncoder()
    const history: Message[] = [user('go')]
    for (let i = 0; i < 200; i++) history.push(call(`c${i}`, `m${i}`), result(`c${i}`, `r${i}`))
    sent(encoder, request(history))
    expect(encoder.size).toBe(401)
    // After a compaction only the head, the summary and the recent messages are sent.
    const compacted = [history[0], user('summary'), ...history.slice(-10)]
    for (let i = 0; i < 40; i++) {
      compacted.push(call(`d${i}`, `n${i}`), result(`d${i}`, `s${i}`))
      sent(encoder, request(compacted))
    }
    expect(encoder.size).toBeLessThanOrEqual(2 * compacted.length + 64)
  })
})
