import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import {
  MockScriptError,
  startMockServer,
  validateScript,
  type MockServer,
  type MockServerOptions,
} from '../src/index.ts'
import { collectSse, readSse } from './sse.ts'

const servers: MockServer[] = []
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()))
})

async function start(options: MockServerOptions) {
  const server = await startMockServer(options)
  servers.push(server)
  return server
}

const user = (text: string) => ({ role: 'user', content: text })

function chat(server: MockServer, body: Record<string, unknown>, init: RequestInit = {}) {
  return fetch(`${server.baseURL}/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: 'Bearer sk-test' },
    body: JSON.stringify({ model: 'deepseek-v4-flash', messages: [user('hi')], ...body }),
    ...init,
  })
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- wire JSON, asserted field by field
const json = (response: Response): Promise<any> => response.json()

const deltas = (frames: any[]) => frames.filter((f) => f.choices.length).map((f) => f.choices[0].delta)

describe('llm-mock-server streaming', () => {
  it('streams reasoning, text and a fragmented tool call in the DeepSeek wire format', async () => {
    const server = await start({
      steps: [
        {
          reasoning: 'Need the file.',
          text: 'Reading it.',
          toolCalls: [{ id: 'call_a', name: 'read_file', arguments: { path: 'src/a.ts' }, split: 3 }],
        },
      ],
    })
    const response = await chat(server, { stream: true })
    expect(response.status).toBe(200)
    expect(response.headers.get('content-type')).toMatch(/^text\/event-stream/)
    const { frames, done } = await collectSse(response)
    expect(done).toBe(true)
    for (const f of frames) {
      expect(f).toMatchObject({ id: 'chatcmpl-mock-0', object: 'chat.completion.chunk', model: 'deepseek-v4-flash' })
      expect(typeof f.created).toBe('number')
    }
    const d = deltas(frames)
    expect(d[0]).toEqual({ role: 'assistant', content: '' })
    expect(d[1]).toEqual({ content: null, reasoning_content: 'Need the file.' })
    expect(d[2]).toEqual({ content: 'Reading it.' })
    expect(d[3]).toEqual({
      tool_calls: [{ index: 0, id: 'call_a', type: 'function', function: { name: 'read_file', arguments: '' } }],
    })
    const fragments = d.slice(4, 7).map((x) => x.tool_calls[0].function.arguments)
    expect(fragments).toHaveLength(3)
    expect(fragments.join('')).toBe('{"path":"src/a.ts"}')
    const last = frames.at(-1)
    expect(last.choices[0].finish_reason).toBe('tool_calls')
    expect(last.usage).toBeUndefined() // no include_usage: no usage at all
    expect(frames.every((f) => f.usage === undefined)).toBe(true)
  })

  it('sends a tool call without an id for `id: null` and with an empty one for `id: ""`', async () => {
    const server = await start({
      steps: [
        {
          toolCalls: [
            { id: null, name: 'a', arguments: {} },
            { id: '', name: 'b', arguments: {} },
          ],
        },
      ],
    })
    const { frames } = await collectSse(await chat(server, { stream: true }))
    const starts = deltas(frames).flatMap((d) => (d.tool_calls?.[0]?.type === 'function' ? [d.tool_calls[0]] : []))
    expect(starts.map((c) => ['id' in c, c.id])).toEqual([
      [false, undefined],
      [true, ''],
    ])
  })

  it('sends the usage frame only when stream_options.include_usage is set', async () => {
    const steps = [{ text: 'ok', usage: { prompt: 100, completion: 20, cacheHit: 60, reasoning: 5 } }]
    const server = await start({
      steps: [
        ...steps,
        ...steps,
        { ...steps[0], usageOn: 'finish' as const },
        { ...steps[0], usageOn: 'both' as const },
      ],
    })
    const expected = {
      prompt_tokens: 100,
      completion_tokens: 20,
      total_tokens: 120,
      prompt_cache_hit_tokens: 60,
      prompt_cache_miss_tokens: 40,
      completion_tokens_details: { reasoning_tokens: 5 },
    }

    const without = await collectSse(await chat(server, { stream: true }))
    expect(without.frames.some((f) => 'usage' in f)).toBe(false)

    const trailing = await collectSse(await chat(server, { stream: true, stream_options: { include_usage: true } }))
    const usageFrame = trailing.frames.at(-1)
    expect(usageFrame.choices).toEqual([])
    expect(usageFrame.usage).toMatchObject(expected)
    expect(trailing.frames.at(-2).choices[0].finish_reason).toBe('stop')
    expect(trailing.frames.at(-2).usage).toBeUndefined()

    const onFinish = await collectSse(await chat(server, { stream: true, stream_options: { include_usage: true } }))
    expect(onFinish.frames.at(-1).choices[0].finish_reason).toBe('stop')
    expect(onFinish.frames.at(-1).usage).toMatchObject(expected)

    const both = await collectSse(await chat(server, { stream: true, stream_options: { include_usage: true } }))
    expect(both.frames.filter((f) => f.usage).length).toBe(2)
  })

  it('computes a plausible usage when the step gives none', async () => {
    const server = await start({ steps: [{ text: 'twelve chars' }] })
    const { frames } = await collectSse(await chat(server, { stream: true, stream_options: { include_usage: true } }))
    const usage = frames.at(-1).usage
    expect(usage.completion_tokens).toBe(3)
    expect(usage.prompt_tokens).toBeGreaterThan(0)
    expect(usage.total_tokens).toBe(usage.prompt_tokens + usage.completion_tokens)
    expect(usage.prompt_cache_miss_tokens).toBe(usage.prompt_tokens)
  })

  it('plays explicit events: interleaved tool calls, keep-alive comments, raw frames, finish and done overrides', async () => {
    const server = await start({
      steps: [
        {
          events: [
            { keepAlive: true },
            { toolCall: { name: 'a', arguments: ['{"x"', ':'] } },
            { toolCall: { name: 'b', arguments: '{}' } },
            { toolArgs: { index: 0, arguments: '1}' } },
            { delayMs: 5 },
            { frame: 'data: {not json}\n\n' },
          ],
          finish: 'length',
          done: false,
          chunkDelayMs: 1,
        },
      ],
    })
    const response = await chat(server, { stream: true })
    const items: Array<{ data?: string; comment?: string }> = []
    for await (const item of readSse(response.body!)) items.push(item)
    expect(items.filter((i) => i.comment !== undefined).map((i) => i.comment)).toEqual(['keep-alive'])
    expect(items.some((i) => i.data === '{not json}')).toBe(true)
    expect(items.some((i) => i.data === '[DONE]')).toBe(false)
    const frames = items.filter((i) => i.data?.startsWith('{"')).map((i) => JSON.parse(i.data!))
    const calls = deltas(frames).flatMap((d) => d.tool_calls ?? [])
    expect(calls.map((c: any) => [c.index, c.id ?? null, c.function.arguments])).toEqual([
      [0, 'call_0_0', ''],
      [0, null, '{"x"'],
      [0, null, ':'],
      [1, 'call_0_1', ''],
      [1, null, '{}'],
      [0, null, '1}'],
    ])
    expect(frames.at(-1).choices[0].finish_reason).toBe('length')
  })

  it('answers HTTP errors with status, body and Retry-After, then continues with the next step', async () => {
    const server = await start({
      steps: [
        { error: { status: 429, retryAfter: 2, message: 'slow down' } },
        { error: { status: 503, body: 'upstream overloaded' } },
        { text: 'after the errors' },
      ],
    })
    const limited = await chat(server, { stream: true })
    expect(limited.status).toBe(429)
    expect(limited.headers.get('retry-after')).toBe('2')
    expect(await json(limited)).toEqual({
      error: { message: 'slow down', type: 'rate_limit_error', param: null, code: 'rate_limit_error' },
    })
    const overloaded = await chat(server, { stream: true })
    expect(overloaded.status).toBe(503)
    expect(overloaded.headers.get('content-type')).toMatch(/^text\/plain/)
    expect(await overloaded.text()).toBe('upstream overloaded')
    const ok = await collectSse(await chat(server, { stream: true }))
    expect(
      deltas(ok.frames)
        .map((d) => d.content)
        .join(''),
    ).toBe('after the errors')
  })

  it('serves a raw non-SSE body when asked to', async () => {
    const server = await start({ steps: [{ raw: { body: '<html>gateway</html>', contentType: 'text/html' } }] })
    const response = await chat(server, { stream: true })
    expect(response.status).toBe(200)
    expect(response.headers.get('content-type')).toBe('text/html')
    expect(await response.text()).toBe('<html>gateway</html>')
  })

  it('stalls until the client aborts, and records the abort', async () => {
    const server = await start({ steps: [{ events: [{ text: 'partial' }, { stall: true }, { text: 'never sent' }] }] })
    const controller = new AbortController()
    const response = await chat(server, { stream: true }, { signal: controller.signal })
    const seen: string[] = []
    let error: unknown
    try {
      for await (const item of readSse(response.body!)) {
        const frame = JSON.parse(item.data!)
        const content = frame.choices[0]?.delta?.content
        if (content) {
          seen.push(content)
          controller.abort()
        }
      }
    } catch (e) {
      error = e
    }
    expect((error as Error).name).toBe('AbortError')
    expect(seen).toEqual(['partial'])
    await expect.poll(() => server.requests[0].aborted).toBe(true)
    expect(server.requests[0].outcome).toBe('served')
  })

  it('holds a stream at a gate until the test releases it; a gate released early passes at once', async () => {
    const server = await start({
      steps: [
        { events: [{ text: 'held' }, { gate: 'never' }, { text: 'not sent' }] },
        { events: [{ text: 'before' }, { gate: 'half' }, { text: 'after' }] },
        { events: [{ text: 'again' }, { gate: 'half' }, { text: 'through' }] },
        { events: [{ gate: 'json' }, { text: 'whole' }] },
      ],
    })
    // Held at a gate nobody opens: the response is still open when the client gives up on it
    // (without the gate it would have ended long before).
    const controller = new AbortController()
    const held = await chat(server, { stream: true }, { signal: controller.signal })
    await expect(
      (async () => {
        for await (const item of readSse(held.body!)) {
          if (JSON.parse(item.data!).choices[0]?.delta?.content === 'held') controller.abort()
        }
      })(),
    ).rejects.toThrow(/abort/i)
    await expect.poll(() => server.requests[0].aborted).toBe(true)

    const response = await chat(server, { stream: true })
    const seen: string[] = []
    let released = false
    for await (const item of readSse(response.body!)) {
      if (item.data === '[DONE]') break
      const content = JSON.parse(item.data!).choices[0]?.delta?.content
      if (!content) continue
      seen.push(content)
      // The first text arrived and the stream waits: nothing after the gate has been written yet.
      if (content === 'before') {
        expect(seen).toEqual(['before'])
        released = true
        server.release('half')
      }
    }
    expect(released).toBe(true)
    expect(seen).toEqual(['before', 'after'])
    // Released for good: the next response passes the same gate without waiting.
    const again = await collectSse(await chat(server, { stream: true }))
    expect(again.frames.map((f) => f.choices?.[0]?.delta?.content ?? '').join('')).toBe('againthrough')
    // A non-streamed answer waits at its gate too.
    let answered = false
    const whole = chat(server, { stream: false }).then(async (r) => {
      answered = true
      return (await r.json()) as any
    })
    await expect.poll(() => server.requests.length).toBe(4)
    expect(answered).toBe(false)
    server.release('json')
    expect((await whole).choices[0].message.content).toBe('whole')
  })

  it('refuses an empty gate name', () => {
    expect(() => validateScript({ steps: [{ events: [{ gate: '' }] }] })).toThrow(
      /steps\[0\]\.events\[0\]\.gate: expected a non-empty gate name/,
    )
  })

  it('resets the connection mid-stream', async () => {
    const server = await start({ steps: [{ events: [{ text: 'half' }, { reset: true }] }] })
    const response = await chat(server, { stream: true })
    await expect(collectSse(response)).rejects.toThrow()
  })

  it('answers 500 with a clear message once the script is exhausted', async () => {
    const server = await start({ steps: [{ text: 'only one' }] })
    await (await chat(server, { stream: true })).text()
    const response = await chat(server, { stream: true })
    expect(response.status).toBe(500)
    const body = await json(response)
    expect(body.error.message).toBe('llm-mock-server: script exhausted: request 2 arrived but the script has 1 step')
    expect(server.requests.map((r) => r.outcome)).toEqual(['served', 'exhausted'])
    expect(server.remaining).toBe(0)
  })

  it('setScript installs a new script and counts its steps from 0; an invalid one is refused', async () => {
    const server = await start({ steps: [{ text: 'first file' }] })
    expect((await json(await chat(server, {}))).choices[0].message.content).toBe('first file')
    server.setScript([{ text: 'second file, step 0' }, { text: 'second file, step 1' }])
    expect(server.remaining).toBe(2)
    expect((await json(await chat(server, {}))).choices[0].message.content).toBe('second file, step 0')
    server.setScript({ steps: [{ text: 'third' }] })
    expect((await json(await chat(server, {}))).choices[0].message.content).toBe('third')
    server.setScript([])
    const refused = await chat(server, {})
    expect(refused.status).toBe(500)
    expect((await json(refused)).error.message).toBe(
      'llm-mock-server: script exhausted: request 1 arrived but the script has 0 steps',
    )
    expect(() => server.setScript([{ nope: 1 } as never])).toThrow(MockScriptError)
    expect(server.requests.map((r) => [r.step, r.outcome])).toEqual([
      [0, 'served'],
      [0, 'served'],
      [0, 'served'],
      [undefined, 'exhausted'],
    ])
  })

  it('fails a step whose request expectations do not match with a 400 describing the mismatch', async () => {
    const server = await start({
      steps: [
        {
          label: 'greeting',
          expect: { lastRole: 'user', lastContains: 'hello', model: 'deepseek-v4-flash' },
          text: 'hi',
        },
        { expect: { lastRole: 'tool', tools: ['read_file'], messageCount: 3 }, text: 'never' },
        { expect: { systemContains: 'You are dsh', stream: false }, text: 'plain' },
      ],
    })
    const ok = await chat(server, { stream: true, messages: [user('well hello there')] })
    expect(ok.status).toBe(200)
    await ok.text()
    const bad = await chat(server, { stream: true, messages: [user('hello')] })
    expect(bad.status).toBe(400)
    expect((await json(bad)).error.message).toBe(
      'llm-mock-server: steps[1] expectation failed: last message role is "user", expected "tool"; ' +
        'request has 1 messages, expected 3; tools read_file not offered (offered: none)',
    )
    const plain = await chat(server, { messages: [{ role: 'system', content: 'You are dsh.' }, user('x')] })
    expect(plain.status).toBe(200)
    expect(server.requests.map((r) => r.outcome)).toEqual(['served', 'expectation-failed', 'served'])
  })

  it('answers a non-streaming request with a JSON chat.completion', async () => {
    const server = await start({
      steps: [
        {
          reasoning: 'r',
          text: 'answer',
          toolCalls: [{ id: 'c1', name: 'ls', arguments: '{"dir":"."}' }],
          usage: { prompt: 5, completion: 2 },
        },
      ],
    })
    const response = await chat(server, {})
    expect(response.headers.get('content-type')).toBe('application/json')
    const body = await json(response)
    expect(body).toMatchObject({
      object: 'chat.completion',
      model: 'deepseek-v4-flash',
      choices: [
        {
          index: 0,
          finish_reason: 'tool_calls',
          message: {
            role: 'assistant',
            content: 'answer',
            reasoning_content: 'r',
            tool_calls: [{ id: 'c1', type: 'function', function: { name: 'ls', arguments: '{"dir":"."}' } }],
          },
        },
      ],
      usage: { prompt_tokens: 5, completion_tokens: 2, total_tokens: 7 },
    })
  })

  it('records every request body and header', async () => {
    const server = await start({ steps: [{ text: 'a' }, { text: 'b' }] })
    await (await chat(server, { stream: true, messages: [user('first')] })).text()
    await (await chat(server, { stream: true, messages: [user('second')] })).text()
    expect(server.requests.map((r: any) => r.body.messages[0].content)).toEqual(['first', 'second'])
    expect(server.requests[0]).toMatchObject({ method: 'POST', path: '/v1/chat/completions', step: 0, aborted: false })
    expect(server.requests[1].headers.authorization).toBe('Bearer sk-test')
    expect(server.served).toBe(2)
  })

  it('rejects malformed requests without consuming a step', async () => {
    const server = await start({ steps: [{ text: 'kept' }] })
    const notJson = await fetch(`${server.baseURL}/chat/completions`, { method: 'POST', body: '{oops' })
    expect(notJson.status).toBe(400)
    expect((await json(notJson)).error.message).toBe('llm-mock-server: request body is not valid JSON')
    const noMessages = await chat(server, { messages: [] })
    expect((await json(noMessages)).error.message).toMatch(/'messages' must be a non-empty array/)
    const wrongPath = await fetch(`${server.url}/chat/completions`, { method: 'POST', body: '{}' })
    expect(wrongPath.status).toBe(404)
    expect((await json(wrongPath)).error.message).toMatch(/serving POST \/v1\/chat\/completions/)
    expect(server.remaining).toBe(1)
    const ok = await collectSse(await chat(server, { stream: true }))
    expect(deltas(ok.frames)[1].content).toBe('kept')
  })

  it('lists models at GET /models', async () => {
    const server = await start({ script: { models: ['m-one', 'm-two'], steps: [] } })
    const body = await json(await fetch(`${server.baseURL}/models`))
    expect(body.object).toBe('list')
    expect(body.data.map((m: { id: string }) => m.id)).toEqual(['m-one', 'm-two'])
  })
})

describe('llm-mock-server script files', () => {
  const dir = mkdtempSync(join(tmpdir(), 'dsh-mock-script-'))
  const write = (name: string, text: string) => {
    const file = join(dir, name)
    writeFileSync(file, text)
    return file
  }

  it('loads YAML and JSON script files', async () => {
    const yamlFile = write('ok.yaml', 'models: [m]\nsteps:\n  - text: from yaml\n')
    const jsonFile = write('ok.json', JSON.stringify([{ text: 'from json' }]))
    for (const [file, text] of [
      [yamlFile, 'from yaml'],
      [jsonFile, 'from json'],
    ]) {
      const server = await start({ script: file })
      const { frames } = await collectSse(await chat(server, { stream: true }))
      expect(deltas(frames)[1].content).toBe(text)
    }
  })

  async function badScript(text: string, name = 'bad.yaml'): Promise<string> {
    const file = write(name, text)
    const error = await startMockServer({ script: file }).then(
      (s) => {
        servers.push(s)
        throw new Error('expected a script error')
      },
      (e: unknown) => e,
    )
    expect(error).toBeInstanceOf(MockScriptError)
    return (error as Error).message.replace(dir + '/', '')
  }

  it('names file, step index and field for invalid scripts', async () => {
    expect(await badScript('steps:\n  - text: ok\n  - txt: typo\n')).toBe(
      "bad.yaml: steps[1]: unknown field 'txt'; expected one of: label, expect, reasoning, text, toolCalls, events, usage, usageOn, finish, delayMs, chunkDelayMs, done, model, id",
    )
    expect(await badScript('steps:\n  - events:\n      - text: a\n        reasoning: b\n')).toBe(
      'bad.yaml: steps[0].events[0]: an event has exactly one of the keys text, reasoning, toolCall, toolArgs, delayMs, stall, gate, keepAlive, reset, frame, forever; got text, reasoning',
    )
    expect(await badScript('steps:\n  - error: {status: 200}\n')).toBe(
      'bad.yaml: steps[0].error.status: expected an HTTP error status 400-599, got 200',
    )
    expect(await badScript('steps:\n  - toolCalls: [{arguments: "{}"}]\n')).toBe(
      'bad.yaml: steps[0].toolCalls[0].name: expected a string, got nothing (the field is missing)',
    )
    expect(await badScript('steps:\n  - events: [{toolArgs: {index: 0, arguments: "x"}}]\n')).toBe(
      'bad.yaml: steps[0].events[0].toolArgs.index: no tool call with index 0 was started earlier in this step',
    )
    expect(await badScript('steps:\n  - text: a\n    events: []\n')).toBe(
      "bad.yaml: steps[0]: use either 'events' or the shorthand fields (text), not both",
    )
    expect(await badScript('steps:\n  - finish: done\n')).toMatch(
      /^bad\.yaml: steps\[0\]\.finish: expected one of stop, length/,
    )
    expect(await badScript('steps: {}\n')).toBe('bad.yaml: steps: expected an array of steps, got an object')
    expect(await badScript('{"steps": [', 'broken.json')).toMatch(/^broken\.json: cannot parse: /)
    expect(await badScript('steps: [\n', 'broken.yaml')).toMatch(/^broken\.yaml: cannot parse: /)
  })

  it('reports a missing script file', async () => {
    await expect(startMockServer({ script: join(dir, 'missing.yaml') })).rejects.toThrow(
      /missing\.yaml: cannot read: ENOENT/,
    )
  })
})

describe('llm-mock-server fault modes: endless, keep-alive only, huge, echoing', () => {
  async function readSome(response: Response, bytes: number): Promise<string> {
    const reader = response.body!.getReader()
    const decoder = new TextDecoder()
    let text = ''
    while (text.length < bytes) {
      const { value, done } = await reader.read()
      if (done) break
      text += decoder.decode(value, { stream: true })
    }
    await reader.cancel()
    return text
  }

  it('forever text keeps sending deltas until the client leaves', async () => {
    const server = await start({ steps: [{ events: [{ text: 'start ' }, { forever: { text: 'more ' } }] }] })
    const response = await chat(server, { stream: true })
    const text = await readSome(response, 20_000)
    expect(text.split('"content":"more "').length).toBeGreaterThan(20)
    await expect.poll(() => server.requests[0].aborted).toBe(true)
    expect(server.requests[0].bytesWritten).toBeGreaterThan(20_000)
  })

  it('forever keepAlive sends only SSE comments', async () => {
    const server = await start({ steps: [{ events: [{ forever: { keepAlive: true, intervalMs: 1 } }] }] })
    const response = await chat(server, { stream: true })
    const text = await readSome(response, 400)
    const lines = text.split('\n').filter((l) => l !== '')
    // The role frame, then comments only.
    expect(lines[0]).toMatch(/^data: /)
    expect(lines.slice(1).every((l) => l === ': keep-alive')).toBe(true)
    expect(lines.length).toBeGreaterThan(10)
  })

  it('forever empty sends data chunks that carry nothing', async () => {
    const server = await start({ steps: [{ events: [{ forever: { empty: true, intervalMs: 1 } }] }] })
    const response = await chat(server, { stream: true })
    const text = await readSome(response, 2000)
    const chunks = text
      .split('\n\n')
      .filter((l) => l.startsWith('data: {'))
      .map((l) => JSON.parse(l.slice(6)))
    expect(chunks.length).toBeGreaterThan(6)
    // After the role frame: nothing but empty deltas, empty content and empty choice lists, in turn.
    const shapes = new Set(
      chunks
        .slice(1)
        .map((c) =>
          JSON.stringify(c.choices.map((x: { delta: unknown; finish_reason: unknown }) => [x.delta, x.finish_reason])),
        ),
    )
    expect([...shapes].sort()).toEqual(['[[{"content":""},null]]', '[[{},null]]', '[]'])
    expect(chunks.every((c) => c.usage === undefined)).toBe(true)
  })

  it('forever frame repeats a raw frame', async () => {
    const server = await start({ steps: [{ events: [{ forever: { frame: 'data: {"x":1}\n\n', intervalMs: 1 } }] }] })
    const response = await chat(server, { stream: true })
    const text = await readSome(response, 500)
    expect(text.split('data: {"x":1}\n\n').length).toBeGreaterThan(5)
  })

  it('raw repeat streams a huge body without building it', async () => {
    const server = await start({
      steps: [{ raw: { status: 200, contentType: 'text/plain', body: 'x'.repeat(1000), repeat: 1000 } }],
    })
    const response = await chat(server, {})
    const body = await response.text()
    expect(body.length).toBe(1_000_000)
    expect(server.requests[0].bytesWritten).toBe(1_000_000)
  })

  it('error echoHeaders puts the request headers (Authorization too) in the error message', async () => {
    const server = await start({ steps: [{ error: { status: 401, message: 'bad key', echoHeaders: true } }] })
    const response = await chat(server, {})
    expect(response.status).toBe(401)
    const body = await json(response)
    expect(body.error.message).toMatch(/^bad key; request headers: /)
    expect(body.error.message).toContain('Bearer sk-test')
  })

  it('validates the new fields', async () => {
    await expect(start({ steps: [{ events: [{ forever: {} }] }] as never })).rejects.toThrow(
      /steps\[0\]\.events\[0\]\.forever: expected exactly one of text, keepAlive, empty or frame/,
    )
    await expect(start({ steps: [{ raw: { body: 'x', repeat: 0 } }] as never })).rejects.toThrow(
      /raw\.repeat: expected at least 1/,
    )
    await expect(start({ steps: [{ error: { status: 401, body: 'x', echoHeaders: true } }] as never })).rejects.toThrow(
      /echoHeaders applies to the default body/,
    )
  })
})
