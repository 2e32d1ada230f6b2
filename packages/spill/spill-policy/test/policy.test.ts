import { chmodSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { createHarness, type Harness } from '@dsh/agent-loop-testkit'
import LocalSpillStore from '@dsh/spill-local'
import * as SpillPolicy from '../src/index.ts'
import { preview } from '../src/index.ts'

let harness: Harness | undefined
afterEach(async () => {
  await harness?.dispose()
  harness = undefined
})

/** A tool that prints whatever the test asks for. */
const Echo = {
  name: 'echo-tool',
  inject: ['tools'],
  apply(ctx: import('cordis').Context) {
    ctx.tools.register<{ lines: number; width?: number; image?: boolean; fail?: boolean }>({
      name: 'emit',
      description: 'emit lines',
      parameters: {
        type: 'object',
        properties: {
          lines: { type: 'integer' },
          width: { type: 'integer' },
          image: { type: 'boolean' },
          fail: { type: 'boolean' },
        },
        required: ['lines'],
      },
      execute(args) {
        const text = Array.from({ length: args.lines }, (_, i) => `line ${i + 1} ${'x'.repeat(args.width ?? 20)}`).join(
          '\n',
        )
        if (args.image)
          return {
            content: [
              { type: 'text', text },
              { type: 'image', mediaType: 'image/png', data: 'AAAA' },
            ],
          }
        if (args.fail) return { content: text, error: { code: 'EXIT_1', message: 'failed' } }
        return { content: text, meta: { own: true } }
      },
    })
  },
}

async function run(args: object, spillDir: string, policy: object = {}) {
  harness = await createHarness({
    script: [{ toolCalls: [{ name: 'emit', arguments: args, callId: 'call-1' }] }, { text: 'done' }],
    plugins: [[Echo], [LocalSpillStore, { dir: spillDir }], [SpillPolicy, policy]],
  })
  await harness.prompt('go')
  const result = harness.session.events.find((e) => e.type === 'tool/result')!.data as {
    message: { content: { type: string; text: string }[]; isError?: boolean }
    error?: { code: string }
    meta?: Record<string, unknown>
  }
  const seen = harness.model.requests[1].messages.find((m) => m.role === 'tool') as { content: { text: string }[] }
  return { result, text: result.message.content[0].text, seen: seen.content[0].text }
}

const full = (n: number, width = 20) =>
  Array.from({ length: n }, (_, i) => `line ${i + 1} ${'x'.repeat(width)}`).join('\n')

describe('@dsh/spill-policy', () => {
  it('leaves a result under maxInlineBytes untouched', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'spillp-'))
    const { text, result } = await run({ lines: 10 }, dir)
    expect(text).toBe(full(10))
    expect(result.meta).toEqual({ own: true })
  })

  it('spills an oversized result whole and shows the model head, marker, tail and path', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'spillp-'))
    const { text, seen, result } = await run({ lines: 20_000 }, dir)
    const path = join(dir, harness!.session.id, 'call-1.txt')
    expect(readFileSync(path, 'utf8')).toBe(full(20_000))
    expect(Buffer.byteLength(text)).toBeLessThanOrEqual(32 * 1024)
    expect(text.startsWith('line 1 x')).toBe(true)
    expect(text).toContain('line 20000 ')
    expect(text).toMatch(/\[\.\.\. [\d,]+ bytes omitted \(lines [\d,]+-[\d,]+ of 20,000\) \.\.\.\]/)
    expect(text).toContain(path)
    expect(text).toMatch(/over the 32 KiB inline limit/)
    expect(seen).toBe(text)
    expect(result.meta).toMatchObject({ own: true, spill: { locator: path, lines: 20_000 } })
    // the omitted span is exactly what the preview lacks
    const [, from, to] = /lines ([\d,]+)-([\d,]+)/.exec(text)!.map((s) => s.replaceAll(',', ''))
    expect(text).toContain(`line ${Number(from) - 1} `)
    expect(text).not.toContain(`line ${from} `)
    expect(text).not.toContain(`line ${to} `)
    expect(text).toContain(`line ${Number(to) + 1} `)
  })

  it('keeps the error status of an oversized error result', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'spillp-'))
    const { result } = await run({ lines: 5_000, fail: true }, dir)
    expect(result.message.isError).toBe(true)
    expect(result.error?.code).toBe('EXIT_1')
    expect(result.meta?.spill).toBeDefined()
  })

  it('does not spill results with images or from excluded tools', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'spillp-'))
    const img = await run({ lines: 5_000, image: true }, dir)
    expect(img.text).toBe(full(5_000))
    await harness!.dispose()
    harness = undefined
    const ex = await run({ lines: 5_000 }, dir, { exclude: ['emit'] })
    expect(ex.text).toBe(full(5_000))
  })

  it('still returns a bounded preview with a note when the spill dir is unwritable', async () => {
    const root = mkdtempSync(join(tmpdir(), 'spillp-'))
    const blocker = join(root, 'not-a-dir')
    writeFileSync(blocker, '')
    const { text, result } = await run({ lines: 20_000 }, blocker)
    expect(Buffer.byteLength(text)).toBeLessThanOrEqual(32 * 1024)
    expect(text.startsWith('line 1 x')).toBe(true)
    expect(text).toMatch(/Saving the full result failed \(.*ENOTDIR.*\), so the omitted part is not available/)
    expect(result.message.isError).toBeUndefined()
    expect(result.meta).toMatchObject({ spill: { failed: 'ENOTDIR' } })
  })

  it('reports a permission failure the same way', async () => {
    if (process.getuid?.() === 0) return // root ignores directory permissions
    const root = mkdtempSync(join(tmpdir(), 'spillp-'))
    chmodSync(root, 0o500)
    try {
      const { text } = await run({ lines: 20_000 }, join(root, 'spill'))
      expect(text).toMatch(/Saving the full result failed \(.*EACCES/)
    } finally {
      chmodSync(root, 0o700)
    }
  })

  it('honours maxInlineBytes / headBytes / tailBytes and refuses a budget that cannot fit', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'spillp-'))
    const { text } = await run({ lines: 400 }, dir, { maxInlineBytes: 4096, headBytes: 1024, tailBytes: 512 })
    expect(Buffer.byteLength(text)).toBeLessThanOrEqual(4096)
    expect(text).toContain('bytes omitted')
    await harness!.dispose()
    harness = undefined
    await expect(
      createHarness({
        plugins: [
          [LocalSpillStore, { dir }],
          [SpillPolicy, { maxInlineBytes: 2048, headBytes: 2048 }],
        ],
      }),
    ).rejects.toThrow(/must not exceed maxInlineBytes/)
  })

  it('unloading the policy stops spilling', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'spillp-'))
    harness = await createHarness({
      script: [{ toolCalls: [{ name: 'emit', arguments: { lines: 5_000 } }] }, { text: 'done' }],
      plugins: [[Echo], [LocalSpillStore, { dir }]],
    })
    const policy = await harness.mount(SpillPolicy, {})
    await policy.dispose()
    await harness.prompt('go')
    const result = harness.session.events.find((e) => e.type === 'tool/result')!.data as {
      message: { content: { text: string }[] }
    }
    expect(result.message.content[0].text).toBe(full(5_000))
  })
})

describe('preview()', () => {
  it('never cuts inside a UTF-8 character', () => {
    const text = '€'.repeat(10_000) // 3 bytes each, no newlines
    const p = preview(text, { headBytes: 1000, tailBytes: 500 })!
    expect(p.head).not.toContain('\uFFFD')
    expect(p.tail).not.toContain('\uFFFD')
    expect(Buffer.byteLength(p.head) + Buffer.byteLength(p.tail) + p.omittedBytes).toBe(30_000)
    expect(p.firstOmittedLine).toBe(1)
    expect(p.lastOmittedLine).toBe(1)
  })

  it('is undefined when nothing needs cutting', () => {
    expect(preview('short', { headBytes: 10, tailBytes: 10 })).toBeUndefined()
  })
})
