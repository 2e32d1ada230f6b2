// The ctx.spillStore seam, exercised through the shipped local provider: the provider occupies
// `ctx.spillStore` while loaded and frees it on unload; `save` keeps the whole text and says how
// to get it back; a store that cannot write rejects with a SpillError carrying a stable code.
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { Context } from 'cordis'
import LocalSpillStore from '@dsh/spill-local'
import { SpillError, SpillStore } from '../src/index.ts'

async function boot(dir: string) {
  const ctx = new Context()
  const fiber = ctx.plugin(LocalSpillStore, { dir })
  await fiber
  return { ctx, fiber }
}

describe('ctx.spillStore', () => {
  it('keeps the whole text, returns a locator the model can read and a hint; gone after unload', async () => {
    const { ctx, fiber } = await boot(mkdtempSync(join(tmpdir(), 'dsh-spill-seam-')))
    expect(ctx.spillStore).toBeInstanceOf(SpillStore)
    const text = 'line\n'.repeat(10_000)
    const record = await ctx.spillStore.save({ sessionId: 's1', callId: 'c1', toolName: 'bash', text })
    expect(record.bytes).toBe(Buffer.byteLength(text))
    expect(readFileSync(record.locator, 'utf8')).toBe(text)
    expect(record.hint).toMatch(/read/)
    await fiber.dispose()
    expect(ctx.get('spillStore')).toBeUndefined()
  })

  it('rejects with a SpillError and a stable code when it cannot store, keeping nothing partial', async () => {
    const root = mkdtempSync(join(tmpdir(), 'dsh-spill-seam-'))
    const blocked = join(root, 'not-a-dir')
    writeFileSync(blocked, 'a file where the spill directory should be')
    const { ctx } = await boot(blocked)
    const error = await ctx.spillStore.save({ sessionId: 's1', callId: 'c1', toolName: 'bash', text: 'x' }).then(
      () => undefined,
      (e: unknown) => e,
    )
    expect(error).toBeInstanceOf(SpillError)
    expect(typeof (error as SpillError).code).toBe('string')
    expect((error as SpillError).code).not.toBe('')
    expect(readFileSync(blocked, 'utf8')).toBe('a file where the spill directory should be')
  })
})
