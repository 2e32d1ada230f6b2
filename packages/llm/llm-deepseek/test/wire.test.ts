import { describe, expect, it } from 'vitest'
import { BlockAssembler, LlmError, type Message } from '@dsh/llm'
import {
  StreamTranslator,
  buildRequestBody,
  codeForStatus,
  errorFromResponse,
  mapFinishReason,
  mapUsage,
  parseRetryAfter,
  toWireMessages,
} from '../src/index.ts'

describe('toWireMessages', () => {
  it('puts the system prompt first and maps every role', () => {
    const history: Message[] = [
      { role: 'user', content: [{ type: 'text', text: 'list files' }] },
      {
        role: 'assistant',
        content: [
          { type: 'reasoning', text: 'I should call ls.' },
          { type: 'text', text: 'Looking.' },
          { type: 'tool-call', callId: 'c1', name: 'bash', arguments: '{"command":"ls"}' },
        ],
      },
      { role: 'tool', callId: 'c1', name: 'bash', content: [{ type: 'text', text: 'a.txt\n' }] },
      { role: 'assistant', content: [{ type: 'tool-call', callId: 'c2', name: 'read', arguments: '{' }] },
    ]
    expect(toWireMessages('be brief', history)).toEqual([
      { role: 'system', content: 'be brief' },
      { role: 'user', content: 'list files' },
      {
        role: 'assistant',
        content: 'Looking.',
        reasoning_content: 'I should call ls.',
        tool_calls: [{ id: 'c1', type: 'function', function: { name: 'bash', arguments: '{"command":"ls"}' } }],
      },
      { role: 'tool', tool_call_id: 'c1', content: 'a.txt\n' },
      // Malformed arguments are sent back exactly as the model produced them.
      {
        role: 'assistant',
        content: null,
        tool_calls: [{ id: 'c2', type: 'function', function: { name: 'read', arguments: '{' } }],
      },
    ])
  })

  it('sends images as data-URL parts and omits an empty system prompt', () => {
    const wire = toWireMessages('', [
      {
        role: 'user',
        content: [
          { type: 'text', text: 'what is this' },
          { type: 'image', mediaType: 'image/png', data: 'AAAA' },
        ],
      },
    ])
    expect(wire).toEqual([
      {
        role: 'user',
        content: [
          { type: 'text', text: 'what is this' },
          { type: 'image_url', image_url: { url: 'data:image/png;base64,AAAA' } },
        ],
      },
    ])
  })
})

describe('buildRequestBody', () => {
  const base = { provider: 'deepseek-official', model: 'deepseek-v4-flash', messages: [] as Message[] }

  it('streams with usage and maps tools', () => {
    const body = buildRequestBody({
      ...base,
      tools: [{ name: 'read', description: 'Read a file', parameters: { type: 'object', properties: {} } }],
      maxTokens: 100,
    })
    expect(body).toMatchObject({
      model: 'deepseek-v4-flash',
      stream: true,
      stream_options: { include_usage: true },
      max_tokens: 100,
      tools: [
        {
          type: 'function',
          function: { name: 'read', description: 'Read a file', parameters: { type: 'object', properties: {} } },
        },
      ],
    })
    expect(body).not.toHaveProperty('thinking')
  })

  it('maps every reasoning effort onto the thinking parameters', () => {
    expect(buildRequestBody({ ...base, reasoningEffort: 'off' })).toMatchObject({ thinking: { type: 'disabled' } })
    expect(buildRequestBody({ ...base, reasoningEffort: 'off' })).not.toHaveProperty('reasoning_effort')
    for (const effort of ['low', 'high', 'max'] as const) {
      expect(buildRequestBody({ ...base, reasoningEffort: effort })).toMatchObject({
        thinking: { type: 'enabled' },
        reasoning_effort: effort,
      })
    }
  })

  it('uses a configured effort table and the configured maxTokens default', () => {
    const efforts = { off: {}, low: { reasoning_effort: 'minimal' }, high: {}, max: {} }
    const body = buildRequestBody({ ...base, reasoningEffort: 'low' }, { efforts, maxTokens: 7 })
    expect(body).toMatchObject({ reasoning_effort: 'minimal', max_tokens: 7 })
    expect(body).not.toHaveProperty('thinking')
  })
})

describe('mapUsage', () => {
  it('splits cache hits and reasoning out of the totals', () => {
    expect(
      mapUsage({
        prompt_tokens: 1000,
        prompt_cache_hit_tokens: 800,
        prompt_cache_miss_tokens: 200,
        completion_tokens: 50,
        completion_tokens_details: { reasoning_tokens: 30 },
      }),
    ).toEqual({ input: 200, cacheRead: 800, output: 20, reasoning: 30, cacheWrite: 0 })
  })

  it('derives the miss share when only prompt_tokens and hits are given', () => {
    expect(mapUsage({ prompt_tokens: 10, prompt_cache_hit_tokens: 4, completion_tokens: 3 })).toEqual({
      input: 6,
      cacheRead: 4,
      output: 3,
      reasoning: 0,
      cacheWrite: 0,
    })
    expect(mapUsage({})).toEqual({ input: 0, cacheRead: 0, output: 0, reasoning: 0, cacheWrite: 0 })
  })
})

describe('mapFinishReason', () => {
  it('maps the wire reasons', () => {
    expect(mapFinishReason('stop')).toBe('stop')
    expect(mapFinishReason('tool_calls')).toBe('tool-calls')
    expect(mapFinishReason('length')).toBe('length')
    expect(mapFinishReason('content_filter')).toBe('content-filter')
    expect(mapFinishReason('something_new')).toBe('other')
    const cut = mapFinishReason('insufficient_system_resource')
    expect(cut).toBeInstanceOf(LlmError)
    expect((cut as LlmError).code).toBe('SERVER')
  })
})

describe('StreamTranslator', () => {
  const frame = (delta: object, extra: object = {}) => ({
    choices: [{ index: 0, delta, finish_reason: null }],
    ...extra,
  })

  it('folds reasoning, text and split tool calls, holding usage and finish for the end', () => {
    const t = new StreamTranslator()
    const chunks = [
      ...t.push(frame({ role: 'assistant', content: null, reasoning_content: 'think' })),
      ...t.push(frame({ content: 'Hi' })),
      ...t.push(
        frame({
          tool_calls: [{ index: 0, id: 'call_a', type: 'function', function: { name: 'read', arguments: '' } }],
        }),
      ),
      ...t.push(frame({ tool_calls: [{ index: 0, function: { arguments: '{"file_' } }] })),
      ...t.push(
        frame({
          tool_calls: [{ index: 1, id: 'call_b', type: 'function', function: { name: 'ls', arguments: '{}' } }],
        }),
      ),
      ...t.push(frame({ tool_calls: [{ index: 0, function: { arguments: 'path":"a"}' } }] })),
      ...t.push({ choices: [{ index: 0, delta: {}, finish_reason: 'tool_calls' }] }),
      ...t.push({
        choices: [],
        usage: { prompt_tokens: 5, prompt_cache_hit_tokens: 0, prompt_cache_miss_tokens: 5, completion_tokens: 9 },
      }),
      ...t.finish(),
    ]
    expect(chunks.map((c) => c.kind)).toEqual([
      'reasoning-delta',
      'text-delta',
      'tool-call-start',
      'tool-call-delta',
      'tool-call-start',
      'tool-call-delta',
      'tool-call-delta',
      'tool-call-end',
      'tool-call-end',
      'usage',
      'finish',
    ])
    const result = BlockAssembler.fold(chunks).result()
    expect(result.message.content).toEqual([
      { type: 'reasoning', text: 'think' },
      { type: 'text', text: 'Hi' },
      { type: 'tool-call', callId: 'call_a', name: 'read', arguments: '{"file_path":"a"}' },
      { type: 'tool-call', callId: 'call_b', name: 'ls', arguments: '{}' },
    ])
    expect(result.finish).toBe('tool-calls')
    expect(result.usage).toEqual({ input: 5, cacheRead: 0, output: 9, reasoning: 0, cacheWrite: 0 })
  })

  it('buffers argument text that arrives before the function name', () => {
    const t = new StreamTranslator()
    const chunks = [
      ...t.push(frame({ tool_calls: [{ index: 0, function: { arguments: '{"a":' } }] })),
      ...t.push(frame({ tool_calls: [{ index: 0, id: 'x', function: { name: 'f', arguments: '1}' } }] })),
      ...t.finish(),
    ]
    expect(chunks).toEqual([
      { kind: 'tool-call-start', index: 0, callId: 'x', name: 'f' },
      { kind: 'tool-call-delta', index: 0, argumentsDelta: '{"a":1}' },
      { kind: 'tool-call-end', index: 0 },
    ])
  })

  it('rejects payloads that are not completion chunks', () => {
    const t = new StreamTranslator()
    expect(() => t.push([1, 2])).toThrow(expect.objectContaining({ code: 'PROTOCOL' }))
    expect(() => t.push({ choices: 'nope' })).toThrow(expect.objectContaining({ code: 'PROTOCOL' }))
    expect(() => t.push({ error: { message: 'overloaded' } })).toThrow(expect.objectContaining({ code: 'SERVER' }))
    expect(() => t.push(frame({ tool_calls: [{ function: { name: 'f' } }] }))).toThrow(
      expect.objectContaining({ code: 'PROTOCOL' }),
    )
    const nameless = new StreamTranslator()
    nameless.push(frame({ tool_calls: [{ index: 0, function: { arguments: '{}' } }] }))
    expect(() => nameless.finish()).toThrow(expect.objectContaining({ code: 'PROTOCOL' }))
  })
})

describe('HTTP errors', () => {
  it('parses Retry-After as seconds, as a date, and retry-after-ms', () => {
    expect(parseRetryAfter(new Headers({ 'retry-after': '3' }))).toBe(3000)
    expect(parseRetryAfter(new Headers({ 'retry-after-ms': '250' }))).toBe(250)
    const now = Date.parse('2030-01-01T00:00:00Z')
    expect(parseRetryAfter(new Headers({ 'retry-after': 'Tue, 01 Jan 2030 00:00:05 GMT' }), now)).toBe(5000)
    expect(parseRetryAfter(new Headers({ 'retry-after': 'soon' }))).toBeUndefined()
    expect(parseRetryAfter(new Headers())).toBeUndefined()
  })

  it('maps statuses to codes', () => {
    expect(codeForStatus(400, 'bad field')).toBe('BAD_REQUEST')
    expect(codeForStatus(400, "This model's maximum context length is 1048576 tokens")).toBe('CONTEXT_OVERFLOW')
    expect(codeForStatus(401, '')).toBe('AUTH')
    expect(codeForStatus(402, 'Insufficient Balance')).toBe('AUTH')
    expect(codeForStatus(422, 'invalid')).toBe('BAD_REQUEST')
    expect(codeForStatus(429, '')).toBe('RATE_LIMIT')
    expect(codeForStatus(500, '')).toBe('SERVER')
    expect(codeForStatus(503, '')).toBe('SERVER')
  })

  it('quotes the server message and keeps the status', () => {
    const error = errorFromResponse(
      429,
      new Headers({ 'retry-after': '2' }),
      JSON.stringify({ error: { message: 'slow down' } }),
    )
    expect(error.code).toBe('RATE_LIMIT')
    expect(error.status).toBe(429)
    expect(error.retryAfterMs).toBe(2000)
    expect(error.message).toContain('slow down')
    expect(errorFromResponse(400, new Headers({ 'retry-after': '2' }), 'plain failure').retryAfterMs).toBeUndefined()
  })
})
