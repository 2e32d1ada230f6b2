// The OTel backend in process, against a local OTLP/HTTP receiver on 127.0.0.1 (node:http decoding
// the JSON the real exporter sends): live records with their figures, two scopes and the resource
// once per batch; feedback mode (nothing until a like, then the replay of the session); local mode
// (a rotated OTLP/JSON file, no request); secrets scrubbed; bad config refused in one line.
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { createHarness } from '@dsh/agent-loop-testkit'
import AnonymousUserId from '@dsh/anonymous-user-id'
import * as MessageFeedback from '@dsh/message-feedback'
import SessionTelemetry from '@dsh/session-telemetry'
import * as Otel from '@dsh/session-telemetry-otel'

interface Received {
  path: string
  contentType: string
  body: any
}

let server: Server
let url: string
const received: Received[] = []
let waiters: Array<() => void> = []
let home: string
/** What the receiver answers (a 500 plays a collector that is down). */
let status = 200
let hits = 0

beforeAll(async () => {
  home = mkdtempSync(join(tmpdir(), 'dsh-otel-unit-'))
  server = createServer((req, res) => {
    let text = ''
    req
      .setEncoding('utf8')
      .on('data', (d: string) => (text += d))
      .on('end', () => {
        hits++
        if (status !== 200) return void res.writeHead(status).end('collector down')
        received.push({ path: req.url ?? '', contentType: String(req.headers['content-type']), body: JSON.parse(text) })
        res.writeHead(200, { 'content-type': 'application/json' }).end('{}')
        for (const wake of waiters.splice(0)) wake()
      })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/logs`
})
afterAll(async () => {
  await new Promise<void>((resolve) => server.close(() => resolve()))
  rmSync(home, { recursive: true, force: true })
})
afterEach(() => {
  received.length = 0
  waiters = []
})

/** Resolves once `test` holds for what the receiver got (checked at each request). */
function until(test: (all: ReturnType<typeof records>) => boolean): Promise<ReturnType<typeof records>> {
  return new Promise((resolve) => {
    const check = () => {
      const all = records(received)
      if (test(all)) resolve(all)
      else waiters.push(check)
    }
    check()
  })
}

const value = (v: any): unknown =>
  v.stringValue ??
  (v.intValue !== undefined
    ? Number(v.intValue)
    : v.kvlistValue
      ? Object.fromEntries(v.kvlistValue.values.map((kv: any) => [kv.key, value(kv.value)]))
      : (v.doubleValue ?? v.boolValue))
function records(batches: Array<{ body: any }>) {
  return batches.flatMap((r) =>
    r.body.resourceLogs.flatMap((rl: any) =>
      rl.scopeLogs.flatMap((sl: any) =>
        sl.logRecords.map((lr: any) => ({
          scope: sl.scope.name as string,
          resource: Object.fromEntries(rl.resource.attributes.map((a: any) => [a.key, value(a.value)])),
          name: lr.eventName as string,
          body: lr.body ? value(lr.body) : undefined,
          attrs: Object.fromEntries(lr.attributes.map((a: any) => [a.key, value(a.value)])) as Record<string, any>,
        })),
      ),
    ),
  )
}

async function harness(config: Record<string, unknown>, telemetry: Record<string, unknown> = {}) {
  const h = await createHarness({
    script: [
      {
        toolCalls: [{ name: 'echo', arguments: { text: 'tool argument text' } }],
        usage: { input: 50, output: 7, cacheRead: 3 },
      },
      { text: 'the final answer text', usage: { input: 60, output: 9 } },
      { text: 'a second answer' },
    ],
    plugins: [
      [AnonymousUserId, { home }],
      [SessionTelemetry, telemetry],
      [MessageFeedback],
      [Otel, { scheduledDelayMillis: 10, endpoint: url, ...config }],
    ],
  })
  h.ctx.tools.register<{ text: string }>({
    name: 'echo',
    description: 'echo',
    parameters: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] },
    execute: (a) => ({ content: `echoed ${a.text}` }),
  })
  return h
}

const stopping = (h: { ctx: any }) => h.ctx.parallel('app/stopping', { reason: 'exit', code: 0 })

describe('mode live', () => {
  it('exports one record per model call, tool call and turn under the ledger scope, the resource once per batch, no content by default', async () => {
    const h = await harness({ mode: 'live' })
    try {
      expect((await h.prompt('the secret prompt text')).reason).toBe('completed')
      const all = await until((all) => all.some((r) => r.name === 'dsh.turn'))
      expect(received.every((r) => r.path === '/v1/logs' && r.contentType.startsWith('application/json'))).toBe(true)
      expect(all.map((r) => r.name)).toEqual(['dsh.model_call', 'dsh.tool_call', 'dsh.model_call', 'dsh.turn'])
      const id = readFileSync(join(home, '.anonymous-user-id'), 'utf8').trim()
      for (const r of all) {
        expect(r.scope).toBe(Otel.SCOPE)
        expect(r.resource).toMatchObject({ 'service.name': 'dsh', 'user.id': id })
        expect(typeof r.resource['service.version']).toBe('string')
        // Identity rides on the resource of the batch, never on a record.
        expect(Object.keys(r.attrs).filter((k) => /user\.id|service\./.test(k))).toEqual([])
      }
      for (const batch of received) expect(batch.body.resourceLogs).toHaveLength(1)
      expect(all[0].attrs).toMatchObject({
        'event.name': 'dsh.model_call',
        'dsh.session_id': h.session.id,
        'dsh.provider': 'scripted',
        'dsh.model': 'scripted-1',
        'dsh.tokens.input': 50,
        'dsh.tokens.output': 7,
        'dsh.tokens.cacheRead': 3,
        'dsh.tool_calls': 1,
      })
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
    } finally {
      await h.dispose()
    }
  })

  it('with includeContent the text goes to the body, scrubbed of the secret values the process knows', async () => {
    const token = 'tok-0123456789abcdef'
    const h = await harness({ mode: 'live', headers: { authorization: `Bearer ${token}` } }, { includeContent: true })
    try {
      await h.prompt(`the secret prompt text with ${token}`)
      const all = await until((all) => all.some((r) => r.name === 'dsh.turn'))
      const raw = JSON.stringify(received.map((r) => r.body))
      for (const text of ['the secret prompt text', 'the final answer text', 'echoed tool argument text'])
        expect(raw).toContain(text)
      expect(raw).not.toContain(token)
      const turn = all.find((r) => r.name === 'dsh.turn')!
      expect(turn.body).toEqual({ prompt: 'the secret prompt text with [REDACTED]' })
      expect(turn.attrs['dsh.prompt']).toBeUndefined()
    } finally {
      await h.dispose()
    }
  })

  it('the older `enabled: true` still means live', async () => {
    const h = await harness({ enabled: true })
    try {
      await h.prompt('hello')
      await until((all) => all.some((r) => r.name === 'dsh.turn'))
    } finally {
      await h.dispose()
    }
  })
})

describe('a failing collector', () => {
  it('never fails a turn, prints one stderr line for several failed batches, and reports the loss on the ops scope once it answers again', async () => {
    const h = await harness({ mode: 'live' })
    const lines: string[] = []
    const write = process.stderr.write
    process.stderr.write = ((chunk: string | Uint8Array) => {
      lines.push(String(chunk))
      return true
    }) as typeof process.stderr.write
    const turn = (sessionId: string) =>
      h.ctx.sessionTelemetry.emit({
        kind: 'turn',
        sessionId,
        time: Date.now(),
        seq: 0,
        reason: 'completed',
        steps: 0,
        modelCalls: 0,
        toolCalls: 0,
        toolErrors: 0,
        tokens: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, reasoning: 0 },
      })
    try {
      status = 500
      const before = hits
      expect((await h.prompt('first')).reason).toBe('completed')
      await stopping(h)
      turn('lost-too')
      await stopping(h)
      const failed = hits - before
      expect(failed).toBeGreaterThanOrEqual(2)
      status = 200
      turn('after-recovery')
      await stopping(h)
      const all = await until((all) => all.some((r) => r.name === 'dsh.telemetry.dropped'))
      const dropped = all.find((r) => r.name === 'dsh.telemetry.dropped')!
      expect(dropped.scope).toBe(Otel.OPS_SCOPE)
      expect(dropped.attrs['dsh.batches']).toBe(failed)
      // The turn's four records and the one emitted after it were lost.
      expect(dropped.attrs['dsh.records']).toBe(5)
      expect(all.some((r) => r.attrs['dsh.session_id'] === 'after-recovery')).toBe(true)
    } finally {
      process.stderr.write = write
      status = 200
      await h.dispose()
    }
    expect(lines).toEqual([
      `dsh: telemetry export to ${url} failed (Internal Server Error); its records are dropped and further failures are not reported\n`,
    ])
  })
})

describe('mode feedback', () => {
  it('exports nothing as the session runs; a like replays the session log with the feedback, under the two scopes; a later rating sends only what is new', async () => {
    const h = await harness({ mode: 'feedback' }, { includeContent: true })
    try {
      await h.prompt('the question')
      // The app stopping flushes whatever is batched: still nothing was sent.
      await stopping(h)
      expect(received).toEqual([])

      const answer = h.session.events.findLast((e) => e.type === 'assistant/message')!
      const like = MessageFeedback.rateMessage(h.session, answer.seq, 'like', 'clear answer')
      const all = await until((all) => all.some((r) => r.name === 'dsh.feedback'))
      expect(all.map((r) => r.name)).toEqual([
        'dsh.telemetry.replay',
        'dsh.model_call',
        'dsh.tool_call',
        'dsh.model_call',
        'dsh.turn',
        'dsh.feedback',
      ])
      expect(all[0]).toMatchObject({
        scope: Otel.OPS_SCOPE,
        attrs: { 'dsh.session_id': h.session.id, 'dsh.trigger_seq': like.seq, 'dsh.from_seq': 0, 'dsh.records': 5 },
      })
      for (const r of all.slice(1)) expect(r.scope).toBe(Otel.SCOPE)
      expect(all[5]).toMatchObject({
        attrs: { 'dsh.target': 'message', 'dsh.rating': 'like', 'dsh.message_seq': answer.seq, 'dsh.seq': like.seq },
        body: { note: 'clear answer' },
      })
      expect(all[4].body).toEqual({ prompt: 'the question' })

      const before = all.length
      const dislike = MessageFeedback.rateMessage(h.session, answer.seq, 'dislike')
      const more = await until((all) => all.length > before + 1)
      expect(more.slice(before).map((r) => [r.name, r.attrs['dsh.rating'] ?? r.attrs['dsh.from_seq']])).toEqual([
        ['dsh.telemetry.replay', like.seq + 1],
        ['dsh.feedback', 'dislike'],
      ])
      expect(more.at(-1)!.attrs['dsh.seq']).toBe(dislike.seq)
    } finally {
      await h.dispose()
    }
  })
})

describe('mode local', () => {
  it('writes OTLP/JSON lines to the file, rotated by size, and sends nothing', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'dsh-otel-local-'))
    const file = join(dir, 'telemetry', 'logs.jsonl')
    const h = await harness({ mode: 'local', localFile: file, localMaxBytes: 4096, localKeep: 1 })
    try {
      await h.prompt('hello local')
      await stopping(h)
      const first = readFileSync(file, 'utf8')
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l))
      const all = records(first.map((body) => ({ body })))
      expect(all.map((r) => r.name)).toEqual(['dsh.model_call', 'dsh.tool_call', 'dsh.model_call', 'dsh.turn'])
      expect(all[0].attrs['dsh.session_id']).toBe(h.session.id)
      // No anonymous id is made for a file that never leaves the machine.
      expect(all[0].resource['user.id']).toBeUndefined()
      expect(statSync(file).mode & 0o777).toBe(0o600)
      // Enough records to pass the size twice: one rotated file is kept, none beyond.
      for (let i = 0; i < 40; i++) {
        h.ctx.sessionTelemetry.emit({
          kind: 'turn',
          sessionId: `padding-${'x'.repeat(200)}`,
          time: Date.now(),
          seq: i,
          reason: 'completed',
          steps: 1,
          modelCalls: 1,
          toolCalls: 0,
          toolErrors: 0,
          tokens: { input: 1, output: 1, cacheRead: 0, cacheWrite: 0, reasoning: 0 },
        })
        if (i % 2 === 1) await stopping(h)
      }
      await stopping(h)
      expect(readdirSync(join(dir, 'telemetry')).sort()).toEqual(['logs.jsonl', 'logs.jsonl.1'])
      for (const name of ['logs.jsonl', 'logs.jsonl.1'])
        expect(statSync(join(dir, 'telemetry', name)).size).toBeLessThanOrEqual(4096)
      expect(received).toEqual([])
    } finally {
      await h.dispose()
      rmSync(dir, { recursive: true, force: true })
    }
  })
})

describe('config', () => {
  it('off (the default) registers nothing', async () => {
    const h = await harness({})
    try {
      await h.prompt('hello')
      await stopping(h)
      expect(received).toEqual([])
    } finally {
      await h.dispose()
    }
  })

  it('a bad mode, endpoint or header list is one line naming the key', async () => {
    expect(() => Otel.resolveConfig({ mode: 'loud' }, {})).toThrow(
      'session-telemetry-otel: mode must be one of off, live, feedback, local; got "loud"',
    )
    expect(() => Otel.resolveConfig({}, { DSH_TELEMETRY_MODE: 'sometimes' })).toThrow(
      /mode must be one of .*; got "sometimes" \(from \$DSH_TELEMETRY_MODE\)$/,
    )
    expect(() => Otel.resolveConfig({ mode: 'live', endpoint: 'ftp://u:pw@host/x' }, {})).toThrow(
      /^session-telemetry-otel: endpoint must be an http\(s\) URL such as .*; got ftp:\/\/host\/x$/,
    )
    expect(() => Otel.resolveConfig({ mode: 'feedback' }, { DSH_TELEMETRY_ENDPOINT: 'nowhere' })).toThrow(
      /endpoint must be an http\(s\) URL .*; got "nowhere" \(from \$DSH_TELEMETRY_ENDPOINT\)$/,
    )
    expect(() => Otel.resolveConfig({ mode: 'live' }, { DSH_TELEMETRY_HEADERS: 'a=1,secretvalue' })).toThrow(
      'session-telemetry-otel: headers: pair 2 of $DSH_TELEMETRY_HEADERS is not name=value (expected k=v,k2=v2)',
    )
    // A local file needs no endpoint.
    expect(Otel.resolveConfig({ mode: 'local', endpoint: 'nowhere' }, {}).mode).toBe('local')
    expect(Otel.resolveConfig({}, { DSH_TELEMETRY_ENABLED: '1' }).mode).toBe('live')
    expect(Otel.resolveConfig({}, {}).mode).toBe('off')

    const h = await createHarness({ plugins: [[SessionTelemetry]] })
    try {
      await expect(h.ctx.plugin(Otel, { mode: 'loud' })).rejects.toThrow(/mode must be one of/)
    } finally {
      await h.dispose()
    }
  })

  it('parses header lists and flattens records', () => {
    expect(Otel.parseHeaders('authorization=Bearer%20x, x-team = a ')).toEqual({
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
    ).toMatchObject({ 'dsh.session_id': 's', 'dsh.model_calls': 1, 'dsh.tokens.input': 1 })
  })
})
