import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { Context } from 'cordis'
import { describe, expect, it } from 'vitest'
import LlmService, { BlockAssembler, LlmError, type LlmAdapter, type LlmRequest, type StreamChunk } from '@dsh/llm'
import replay, { loadRecording, RecordingError, type Config } from '../src/index.ts'

const FIXTURE = fileURLToPath(new URL('./fixtures/session.jsonl', import.meta.url))
const dir = mkdtempSync(join(tmpdir(), 'dsh-replay-'))

// Read independently of loadRecording: the chunks logged between each step/start and the next.
function loggedChunksPerStep(file: string): StreamChunk[][] {
  const out: StreamChunk[][] = []
  for (const line of readFileSync(file, 'utf8').split('\n').filter(Boolean)) {
    const event = JSON.parse(line)
    if (event.type === 'step/start') out.push([])
    if (event.type === 'assistant/chunk') out.at(-1)!.push(event.data.chunk)
  }
  return out
}

const request = (over: Partial<LlmRequest> = {}): LlmRequest => ({
  provider: 'deepseek-official',
  model: 'deepseek-v4-flash',
  messages: [{ role: 'user', content: [{ type: 'text', text: 'x' }] }],
  ...over,
})

async function collect(stream: AsyncIterable<StreamChunk>) {
  const chunks: StreamChunk[] = []
  try {
    for await (const chunk of stream) chunks.push(chunk)
  } catch (error) {
    return { chunks, error: error as LlmError }
  }
  return { chunks, error: undefined }
}

async function boot(config: Config) {
  const root = new Context()
  await root.plugin(LlmService)
  const fiber = root.plugin(replay, config)
  await fiber
  return { root, fiber }
}

describe('loadRecording', () => {
  it('groups the recorded chunks by turn and step', () => {
    const recording = loadRecording(FIXTURE)
    expect(recording.steps.map((s) => [s.turn, s.step, s.chunks.length, s.synthesized])).toEqual([
      [0, 0, 9, false],
      [0, 1, 4, false],
      [1, 0, 4, true],
      [2, 0, 2, false],
    ])
    expect(recording.steps.map((s) => s.chunks).filter((_, i) => i !== 2)).toEqual(
      loggedChunksPerStep(FIXTURE).filter((c) => c.length),
    )
    expect(recording.steps[0]).toMatchObject({ provider: 'deepseek-official', model: 'deepseek-v4-flash' })
    expect(recording.steps[3]).toMatchObject({
      model: 'deepseek-v4-pro',
      interrupted: true,
      error: { code: 'TIMEOUT', message: 'no data from deepseek-official for 300000 ms' },
    })
    expect(recording.models).toEqual([
      { provider: 'deepseek-official', model: 'deepseek-v4-flash' },
      { provider: 'deepseek-official', model: 'deepseek-v4-pro' },
    ])
  })

  it('synthesizes chunks that fold back into the recorded message', () => {
    const step = loadRecording(FIXTURE).steps[2]
    expect(step.chunks).toEqual([
      { kind: 'reasoning-delta', text: 'Polite close.', signature: 'sig-abc' },
      { kind: 'text-delta', text: "You're welcome." },
      { kind: 'usage', usage: { input: 12, output: 2, cacheRead: 1280, cacheWrite: 0, reasoning: 0 } },
      { kind: 'finish', reason: 'stop' },
    ])
    expect(BlockAssembler.fold(step.chunks).snapshot()).toEqual(step.message)
  })

  it('names file and line for a malformed line', () => {
    const file = join(dir, 'torn.jsonl')
    const lines = readFileSync(FIXTURE, 'utf8').split('\n')
    lines.splice(4, 0, '{"type":"assistant/chunk","seq":4,"ti')
    writeFileSync(file, lines.join('\n'))
    expect(() => loadRecording(file)).toThrow(RecordingError)
    expect(() => loadRecording(file)).toThrow(
      new RegExp(`^${file.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}:5: malformed JSON: `),
    )
  })

  it('rejects lines that are not session events, and invalid chunk sequences', () => {
    const notEvent = join(dir, 'not-event.jsonl')
    writeFileSync(notEvent, '{"type":"turn/start","seq":0,"time":1,"data":{"turn":0}}\n[1,2]\n')
    expect(() => loadRecording(notEvent)).toThrow(`${notEvent}:2: not a session event`)

    const badChunk = join(dir, 'bad-chunk.jsonl')
    writeFileSync(
      badChunk,
      [
        { type: 'step/start', seq: 0, time: 1, data: { turn: 0, step: 0 } },
        {
          type: 'assistant/chunk',
          seq: 1,
          time: 2,
          data: { chunk: { kind: 'tool-call-delta', index: 0, argumentsDelta: '{}' } },
        },
      ]
        .map((e) => JSON.stringify(e))
        .join('\n'),
    )
    expect(() => loadRecording(badChunk)).toThrow(
      `${badChunk}:2: assistant/chunk: invalid chunk in turn 0 step 0: stream chunk #0: tool-call-delta for index 0, which was never started`,
    )
    expect(() => loadRecording(join(dir, 'missing.jsonl'))).toThrow(
      /missing\.jsonl:0: cannot read the recording: ENOENT/,
    )
  })
})

describe('llm-replay plugin', () => {
  it('replays every recorded step through ctx.llm.stream with identical chunks, without any adapter', async () => {
    const { root } = await boot({ file: FIXTURE })
    expect(root.llm.listProviders()).toEqual([])
    const recording = loadRecording(FIXTURE)
    const logged = loggedChunksPerStep(FIXTURE)

    const first = await collect(root.llm.stream(request()))
    expect(first).toEqual({ chunks: logged[0], error: undefined })
    const second = await collect(root.llm.stream(request()))
    expect(second.chunks).toEqual(logged[1])
    const third = await root.llm.complete(request())
    expect(third).toEqual({
      message: recording.steps[2].message,
      usage: { input: 12, output: 2, cacheRead: 1280, cacheWrite: 0, reasoning: 0 },
      finish: 'stop',
    })
    const fourth = await collect(root.llm.stream(request()))
    expect(fourth.chunks).toEqual(logged[3])
    expect(fourth.error?.code).toBe('TIMEOUT')
  })

  it('fails the request after the last recorded step with EMPTY_RESPONSE naming the step count', async () => {
    const { root } = await boot({ file: FIXTURE })
    for (let i = 0; i < 4; i++) await collect(root.llm.stream(request()))
    const { chunks, error } = await collect(root.llm.stream(request()))
    expect(chunks).toEqual([])
    expect(LlmError.is(error)).toBe(true)
    expect(error!.code).toBe('EMPTY_RESPONSE')
    expect(error!.message).toBe(
      `llm-replay: model request 5 has no recorded response; the recording ${FIXTURE} has 4 steps`,
    )
  })

  it('short-circuits ahead of a registered adapter and stops when unloaded', async () => {
    const root = new Context()
    await root.plugin(LlmService)
    const live: LlmAdapter = {
      provider: 'deepseek-official',
      async *stream() {
        yield { kind: 'text-delta', text: 'live model' }
      },
      listModels: () => [],
    }
    root.llm.registerAdapter(live)
    const fiber = root.plugin(replay, { file: FIXTURE })
    await fiber
    expect((await collect(root.llm.stream(request()))).chunks[0]).toEqual({
      kind: 'reasoning-delta',
      text: 'The user wants',
    })
    await fiber.dispose()
    expect((await collect(root.llm.stream(request()))).chunks).toEqual([{ kind: 'text-delta', text: 'live model' }])
  })

  it('registers replay-only adapters with a catalog when providers are configured', async () => {
    const { root, fiber } = await boot({ file: FIXTURE, providers: ['deepseek-official', 'other-route'] })
    expect(root.llm.listProviders()).toEqual(['deepseek-official', 'other-route'])
    expect((await root.llm.listModels('deepseek-official')).map((m) => m.id)).toEqual([
      'deepseek-v4-flash',
      'deepseek-v4-pro',
    ])
    expect(await root.llm.resolveModelInfo('other-route', 'deepseek-v4-pro')).toMatchObject({
      provider: 'other-route',
      contextWindow: 128_000,
    })
    // One shared cursor across routes.
    expect((await collect(root.llm.stream(request()))).chunks).toHaveLength(9)
    expect((await collect(root.llm.stream(request({ provider: 'other-route' })))).chunks).toHaveLength(4)
    // Unknown routes are not answered in this mode.
    expect((await collect(root.llm.stream(request({ provider: 'ghost' })))).error?.code).toBe('UNKNOWN_PROVIDER')
    await fiber.dispose()
    expect(root.llm.listProviders()).toEqual([])
  })

  it('in strict mode rejects a request that diverges from the recording', async () => {
    const { root } = await boot({ file: FIXTURE, strict: true })
    const ok = await collect(root.llm.stream(request({ metadata: { turn: 0, step: 0 } })))
    expect(ok.error).toBeUndefined()
    const bad = await collect(root.llm.stream(request({ model: 'deepseek-v4-pro', metadata: { turn: 0, step: 3 } })))
    expect(bad.error?.code).toBe('BAD_REQUEST')
    expect(bad.error?.message).toBe(
      `llm-replay: model request 2 diverges from turn 0 step 1 of ${FIXTURE}: model is 'deepseek-v4-pro', recorded 'deepseek-v4-flash'; step is 3, recorded 1`,
    )
  })

  it('ends a replayed stream with ABORTED when the request signal is aborted', async () => {
    const { root } = await boot({ file: FIXTURE })
    const controller = new AbortController()
    const chunks: StreamChunk[] = []
    let error: LlmError | undefined
    try {
      for await (const chunk of root.llm.stream(request({ signal: controller.signal }))) {
        chunks.push(chunk)
        if (chunks.length === 2) controller.abort()
      }
    } catch (e) {
      error = e as LlmError
    }
    expect(chunks).toHaveLength(2)
    expect(error?.code).toBe('ABORTED')
  })

  it('fails to load with a malformed recording or a bad config', async () => {
    const file = join(dir, 'broken.jsonl')
    writeFileSync(file, '{"type":"turn/start","seq":0,"time":1,"data":{"turn":0}}\nnot json\n')
    const root = new Context()
    await root.plugin(LlmService)
    await expect(root.plugin(replay, { file })).rejects.toThrow(`${file}:2: malformed JSON`)
    await expect(root.plugin(replay, {} as never)).rejects.toThrow()
    // Nothing was installed: the request falls through to routing.
    expect((await collect(root.llm.stream(request()))).error?.code).toBe('UNKNOWN_PROVIDER')
  })
})
