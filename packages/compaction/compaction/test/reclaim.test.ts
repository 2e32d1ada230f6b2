// reclaimMemory(): V8's memory-reducing collection, and the seam calling it after a compaction.
import v8 from 'node:v8'
import { afterEach, expect, it } from 'vitest'
import type { Context } from 'cordis'
import { createHarness, type Harness } from '@dsh/agent-loop-testkit'
import type { Session } from '@dsh/session'
import {
  CompactionEngine,
  asCompactionId,
  heapSlack,
  reclaimMemory,
  type CompactOptions,
  type CompactionResult,
  type ReclaimResult,
} from '../src/index.ts'

const harnesses: Harness[] = []
afterEach(async () => {
  for (const h of harnesses.splice(0)) await h.dispose()
})

const young = () => v8.getHeapSpaceStatistics().find((s) => s.space_name === 'new_space')?.physical_space_size ?? 0

// First in the file: the experimental-API warning is emitted once per process, at the first call.
it('keeps v8.queryObjects’ experimental warning off stderr and restores process.emitWarning', async () => {
  const warnings: string[] = []
  const listen = (w: Error) => void warnings.push(`${w.name}: ${w.message}`)
  process.on('warning', listen)
  const original = process.emitWarning
  try {
    expect(reclaimMemory()).toBeDefined()
    expect(process.emitWarning).toBe(original)
    process.emitWarning('a later warning still goes through')
    await new Promise((r) => setImmediate(r))
  } finally {
    process.off('warning', listen)
  }
  expect(warnings).toEqual(['Warning: a later warning still goes through'])
})

it('shrinks the young generation V8 grew and reports RSS and CPU', () => {
  // Objects that survive scavenges make V8 grow its young generation (to 32 MB on 64-bit Node 20).
  let keep: object[] = []
  for (let round = 0; round < 6; round++) for (let i = 0; i < 100_000; i++) keep.push({ i, s: `item ${i} ${round}` })
  const grown = young()
  keep = []
  const result = reclaimMemory() as ReclaimResult
  // Positive control: the young generation had grown past its 1 MB start.
  expect(grown).toBeGreaterThan(4 * 2 ** 20)
  expect(young()).toBeLessThan(grown / 2)
  expect(result.rssBefore).toBeGreaterThan(0)
  expect(result.rssAfter).toBeGreaterThan(0)
  expect(result.cpuMs).toBeGreaterThanOrEqual(0)
  expect(keep).toHaveLength(0)
})

it('skips the collection when the heap holds less slack than asked for', () => {
  expect(heapSlack()).toBeGreaterThan(0)
  expect(reclaimMemory({ minSlackBytes: 2 ** 50 })).toBeUndefined()
  // Control: the same call with a threshold the heap meets collects.
  expect(reclaimMemory({ minSlackBytes: 1 })).toBeDefined()
})

/** A backend whose run returns `status` and whose reclaim switch is `reclaim`. */
class FixedEngine extends CompactionEngine {
  static inject = ['sessions']
  status: 'compacted' | 'failed' | 'skipped' = 'compacted'
  reclaim: boolean | 'throws' = true
  constructor(ctx: Context) {
    super(ctx, 'fixed')
  }
  protected reclaimMemoryAfterCompaction() {
    if (this.reclaim === 'throws')
      return {
        get minSlackBytes(): number {
          throw new Error('collection broke')
        },
      }
    return this.reclaim ? {} : undefined
  }
  protected async run(_session: Session, _options: CompactOptions): Promise<CompactionResult> {
    const id = asCompactionId('c1')
    if (this.status === 'skipped') return { status: 'skipped', reason: 'nothing' }
    if (this.status === 'failed') return { status: 'failed', id, error: { code: 'X', message: 'x' } }
    return { status: 'compacted', id, fromSeq: 0, toSeq: 0, tokensBefore: 10, tokensAfter: 1, summary: 's' }
  }
}

it('reclaims after a compacted run only, when the backend asks for it, after compaction/finished', async () => {
  const h = await createHarness({ plugins: [[FixedEngine]] })
  harnesses.push(h)
  const engine = h.ctx.compaction as FixedEngine
  const seen: string[] = []
  h.ctx.on('compaction/finished', (_s, r) => void seen.push(`finished ${r.status}`))
  h.ctx.on('compaction/reclaimed', (s, r) => {
    expect(s).toBe(h.session)
    expect(r.rssAfter).toBeGreaterThan(0)
    seen.push('reclaimed')
  })
  await engine.compact(h.session, { reason: 'manual' })
  engine.status = 'failed'
  await engine.compact(h.session, { reason: 'manual' })
  engine.status = 'skipped'
  await engine.compact(h.session, { reason: 'manual' })
  engine.status = 'compacted'
  engine.reclaim = false
  await engine.compact(h.session, { reason: 'manual' })
  expect(seen).toEqual(['finished compacted', 'reclaimed', 'finished failed', 'finished skipped', 'finished compacted'])
})

it('a collection that throws leaves the compaction compacted (logged, not rethrown)', async () => {
  const h = await createHarness({ plugins: [[FixedEngine]] })
  harnesses.push(h)
  const engine = h.ctx.compaction as FixedEngine
  engine.reclaim = 'throws'
  const result = await engine.compact(h.session, { reason: 'manual' })
  expect(result.status).toBe('compacted')
})
