// Utf8Decoder gives what the browser's TextDecoder gives (WHATWG error handling included) for
// any bytes, whole or split across calls; readSse decodes in script (never through the
// browser's decoders, whose strings cost a long finalizer task after a major GC).
import { afterEach, describe, expect, it, vi } from 'vitest'
import { readSse, Utf8Decoder } from '../src/index.ts'

const bytesOf = (...values: number[]) => new Uint8Array(values)
const reference = (bytes: Uint8Array) => new TextDecoder().decode(bytes)

describe('Utf8Decoder', () => {
  it('decodes ASCII, two-, three- and four-byte sequences, long and short runs', () => {
    const text = 'plain ' + 'x'.repeat(20_000) + ' é 思考 😀 end ' + '混合 text '.repeat(3_000)
    expect(new Utf8Decoder().decode(new TextEncoder().encode(text))).toBe(text)
  })

  it('replaces invalid sequences as TextDecoder does', () => {
    const cases = [
      [0xff],
      [0x80],
      [0xc3],
      [0xe2, 0x82],
      [0xed, 0xa0, 0x80],
      [0xf0, 0x9f, 0x98],
      [0x61, 0xc3, 0x28, 0x62],
      [0xf4, 0x90, 0x80, 0x80],
      [0xe0, 0x80, 0xaf],
      [0xc0, 0xaf],
      [0xf5, 0x80],
      [0xf0, 0x9f, 0x98, 0x80, 0x80],
    ]
    for (const values of cases)
      expect(new Utf8Decoder().decode(bytesOf(...values)), JSON.stringify(values)).toBe(reference(bytesOf(...values)))
  })

  it('keeps a sequence split across calls with { stream: true }, and ends an incomplete one with U+FFFD', () => {
    const smile = new TextEncoder().encode('a😀b思c')
    for (let cut = 0; cut <= smile.length; cut++) {
      const decoder = new Utf8Decoder()
      expect(decoder.decode(smile.subarray(0, cut), { stream: true }) + decoder.decode(smile.subarray(cut))).toBe(
        'a😀b思c',
      )
    }
    const decoder = new Utf8Decoder()
    expect(decoder.decode(bytesOf(0x61, 0xe6, 0x80), { stream: true })).toBe('a')
    expect(decoder.decode(new Uint8Array(0))).toBe('\ufffd')
  })

  it('matches TextDecoder on random bytes split at random points', () => {
    let seed = 7
    const random = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31
    const likely = [0x61, 0x0a, 0xe6, 0x80, 0x9d, 0xf0, 0x9f, 0xc3, 0xa9, 0xed, 0xbf]
    for (let round = 0; round < 3_000; round++) {
      const bytes = new Uint8Array(Math.floor(random() * 60))
      for (let i = 0; i < bytes.length; i++)
        bytes[i] = random() < 0.5 ? Math.floor(random() * 256) : likely[Math.floor(random() * likely.length)]
      const cuts = [Math.floor(random() * (bytes.length + 1)), Math.floor(random() * (bytes.length + 1))].sort(
        (a, b) => a - b,
      )
      const decoder = new Utf8Decoder()
      const text =
        decoder.decode(bytes.subarray(0, cuts[0]), { stream: true }) +
        decoder.decode(bytes.subarray(cuts[0], cuts[1]), { stream: true }) +
        decoder.decode(bytes.subarray(cuts[1]))
      expect(text, `bytes ${[...bytes]} cut at ${cuts}`).toBe(reference(bytes))
    }
  })
})

describe('readSse decoding', () => {
  afterEach(() => vi.unstubAllGlobals())

  it('decodes frames in script, multi-byte text split across reads, without the browser decoders', async () => {
    const whole = new TextEncoder().encode('data: {"text":"思考 😀 é"}\n\n' + 'data: ' + 'x'.repeat(40_000) + '\n\n')
    const fetchFn: typeof fetch = async () =>
      new Response(
        new ReadableStream<Uint8Array>({
          start(controller) {
            for (let at = 0; at < whole.length; at += 5) controller.enqueue(whole.slice(at, at + 5))
            controller.close()
          },
        }),
        { status: 200 },
      )
    const refuse = class {
      constructor() {
        throw new Error('readSse used the browser decoder')
      }
    }
    void new Response('') // Node's fetch classes load (and use TextDecoder) on first use: before the stubs
    vi.stubGlobal('TextDecoder', refuse)
    vi.stubGlobal('TextDecoderStream', refuse)
    const seen: string[] = []
    await readSse('http://x/', {
      signal: new AbortController().signal,
      fetch: fetchFn,
      onFrame: (f) => seen.push(f.data),
    })
    expect(seen).toEqual(['{"text":"思考 😀 é"}', 'x'.repeat(40_000)])
  })
})
