// The OTLP/HTTP logs backend against a local receiver on 127.0.0.1: one record per model call, tool
// call and turn, with the expected figures, and no prompt or output text unless asked for.
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterEach, describe, expect, it } from 'vitest'
import { createHarness } from '@dsh/agent-loop-testkit'
import SessionTelemetry from '@dsh/session-telemetry'
import * as Otel from '@dsh/session-telemetry-otel'

interface Received {
  path: string
  contentType: string
  body: any
}

let server: Server | undefined
afterEach(async () => {
  await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()))
  server = undefined
})

async function receiver(): Promise<{ url: string; received: Received[] }> {
  const received: Received[] = []
  server = createServer((req, res) => {
    let text = ''
    req
      .setEncoding('utf8')
      .on('data', (d: string) => (text += d))
      .on('end', () => {
        received.push({ path: req.url ?? '', contentType: String(req.headers['content-type']), body: JSON.parse(text) })
        res.writeHead(200, { 'content-type': 'application/json' }).end('{}')
      })
  })
  await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve))
  return { url: `http://127.0.0.1:${(server!.address() as AddressInfo).port}/v1/logs`, received }
}

const value = (v: any) =>
  v.stringValue ?? (v.intValue !== undefined ? Number(v.intValue) : (v.doubleValue ?? v.boolValue))
function records(received: Received[]) {
  return received.flatMap((r) =>
    r.body.resourceLogs.flatMap((rl: any) =>
      rl.scopeLogs.flatMap((sl: any) =>
        sl.logRecords.map((lr: any) => ({
          scope: sl.scope.name,
          resource: Object.fromEntries(rl.resource.attributes.map((a: any) => [a.key, value(a.value)])),
          name: lr.eventName,
          body: lr.body,
          attrs: Object.fromEntries(lr.attributes.map((a: any) => [a.key, value(a.value)])),
        })),
      ),
    ),
  )
}

async function run(config: Record<string, unknown>, telemetry: Record<string, unknown> = {}) {
  const h = await createHarness({
    script: [
      {
        toolCalls: [{ name: 'echo', arguments: { text: 'tool argument text' } }],
        usage: { input: 50, output: 7, cacheRead: 3 },
      },
      { text: 'the final answer text', usage: { input: 60, output: 9 } },
    ],
    plugins: [
      [SessionTelemetry, telemetry],
      [Otel, config],
    ],
  })
  h.ctx.tools.register<{ text: string }>({
    name: 'echo',
    description: 'echo',
    parameters: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] },
    execute: (a) => ({ content: `echoed ${a.text}` }),
  })
  const result = await h.prompt('the secret prompt text')
  expect(result.reason).toBe('completed')
  await h.ctx.parallel('app/stopping', { reason: 'exit', code: 0 } as never)
  return h
}

describe('@dsh/session-telemetry-otel', () => {
  it('exports one record per model call, tool call and turn over OTLP/HTTP, without content by default', async () => {
    const { url, received } = await receiver()
    const h = await run({ enabled: true, endpoint: url, scheduledDelayMillis: 10 })
    try {
      expect(received.every((r) => r.path === '/v1/logs' && r.contentType.startsWith('application/json'))).toBe(true)
      const all = records(received)
      expect(all.map((r) => r.name)).toEqual(['dsh.model_call', 'dsh.tool_call', 'dsh.model_call', 'dsh.turn'])
      expect(all[0]).toMatchObject({
        scope: Otel.SCOPE,
        resource: { 'service.name': 'dsh' },
        attrs: {
          'dsh.session_id': h.session.id,
          'dsh.provider': 'scripted',
          'dsh.model': 'scripted-1',
          'dsh.tokens.input': 50,
          'dsh.tokens.output': 7,
          'dsh.tool_calls': 1,
        },
      })
      expect(all[0].attrs['dsh.tokens.cacheRead']).toBe(3)
      expect(all[1].attrs).toMatchObject({ 'dsh.tool': 'echo', 'dsh.is_error': false })
      expect(all[3].attrs).toMatchObject({
        'dsh.reason': 'completed',
        'dsh.steps': 2,
        'dsh.model_calls': 2,
        'dsh.tool_calls': 1,
        'dsh.tokens.input': 110,
        'dsh.tokens.output': 16,
      })
      const raw = JSON.stringify(received.map((r) => r.body))
      for (const secret of ['the secret prompt text', 'the final answer text', 'tool argument text', 'echoed'])
        expect(raw).not.toContain(secret)
      for (const r of all) expect(JSON.stringify(r.body ?? null)).not.toMatch(/prompt|output|arguments|result/)
    } finally {
      await h.dispose()
    }
  })

  it('with includeContent the text goes to the record body', async () => {
    const { url, received } = await receiver()
    const h = await run({ enabled: true, endpoint: url, scheduledDelayMillis: 10 }, { includeContent: true })
    try {
      const raw = JSON.stringify(received.map((r) => r.body))
      for (const text of [
        'the secret prompt text',
        'the final answer text',
        'tool argument text',
        'echoed tool argument text',
      ])
        expect(raw).toContain(text)
      const turn = records(received).find((r) => r.name === 'dsh.turn')!
      expect(JSON.stringify(turn.body)).toContain('the secret prompt text')
      expect(turn.attrs['dsh.prompt']).toBeUndefined()
    } finally {
      await h.dispose()
    }
  })

  it('is off unless enabled: nothing is sent', async () => {
    const { url, received } = await receiver()
    const h = await run({ enabled: false, endpoint: url, scheduledDelayMillis: 10 })
    try {
      expect(received).toEqual([])
    } finally {
      await h.dispose()
    }
  })

  it('a bad endpoint fails the row at load, naming the field', async () => {
    const h = await createHarness({ plugins: [[SessionTelemetry]] })
    try {
      await expect(h.ctx.plugin(Otel, { enabled: true, endpoint: 'ftp://nope' })).rejects.toThrow(
        /endpoint must be an http\(s\) URL/,
      )
    } finally {
      await h.dispose()
    }
  })

  it('parses header lists and flattens records', () => {
    expect(Otel.parseHeaders('authorization=Bearer%20x, x-team = a ,bad')).toEqual({
      authorization: 'Bearer x',
      'x-team': 'a',
    })
    expect(
      Otel.attributesOf({
        kind: 'turn',
        sessionId: 's',
        time: 1,
        seq: 2,
        reason: 'completed',
        steps: 1,
        modelCalls: 1,
        toolCalls: 0,
        toolErrors: 0,
        tokens: { input: 1, output: 2, cacheRead: 0, cacheWrite: 0, reasoning: 0 },
      }),
    ).toMatchObject({
      'dsh.session_id': 's',
      'dsh.model_calls': 1,
      'dsh.tokens.input': 1,
    })
  })
})
