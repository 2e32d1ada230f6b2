// The suite's own file order (scripts/vitest-sequencer.ts) and its record (scripts/test-durations.mjs):
// longest recorded file first within a group, groups and projects kept apart, failed and untimed
// files first; the record written from vitest's results cache (whole files, hooks included), bad
// input refused.
import { describe, expect, it } from 'vitest'
import { spawnSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { TestSpecification, Vitest } from 'vitest/node'
import LongestFirstSequencer, { compareTimed, readDurations } from '../../../../scripts/vitest-sequencer.ts'

const SCRIPT = fileURLToPath(new URL('../../../../scripts/test-durations.mjs', import.meta.url))
const ROOT = fileURLToPath(new URL('../../../../', import.meta.url)).replace(/\/$/, '')

/** A specification as the sequencer reads it: its file, its project's name and group. */
function spec(file: string, project = 'shared', groupOrder = 1): TestSpecification {
  return {
    moduleId: join(ROOT, file),
    project: { name: project, config: { sequence: { groupOrder } } },
  } as unknown as TestSpecification
}

/** A sequencer over the committed record, with `cached` standing in for this machine's vitest cache. */
function sequencer(cached: Record<string, { duration: number; failed: boolean }> = {}) {
  const ctx = {
    config: { root: ROOT },
    cache: { getFileTestResults: (key: string) => cached[key] },
  } as unknown as Vitest
  return new LongestFirstSequencer(ctx)
}

describe('the test order', () => {
  it('runs the longest recorded file first, keeping groups and projects apart', () => {
    const t = (seconds: number | undefined, over: Partial<Parameters<typeof compareTimed>[0]> = {}) => ({
      groupOrder: 1,
      project: 'shared',
      seconds,
      failed: false,
      ...over,
    })
    const order = [
      t(1, { groupOrder: 1 }),
      t(30, { groupOrder: 1 }),
      t(2, { groupOrder: 0, project: 'isolated' }),
      t(20, { groupOrder: 0, project: 'isolated' }),
      t(undefined),
      t(0.5, { failed: true }),
      t(5),
    ].sort(compareTimed)
    expect(order.map((x) => [x.groupOrder, x.seconds, x.failed])).toEqual([
      [0, 20, false],
      [0, 2, false],
      [1, 0.5, true],
      [1, undefined, false],
      [1, 30, false],
      [1, 5, false],
      [1, 1, false],
    ])
  })

  it('orders the real files by the committed record, untimed ones first', async () => {
    const record = readDurations()
    const known = Object.entries(record).sort(([, a], [, b]) => a - b)
    expect(known.length).toBeGreaterThan(100)
    const [shortest] = known[0]
    const [longest] = known[known.length - 1]
    const untimed = 'packages/boot/cli/test/not-recorded.test.ts'
    const sorted = await sequencer().sort([spec(shortest), spec(untimed), spec(longest)])
    expect(sorted.map((s) => s.moduleId.slice(ROOT.length + 1))).toEqual([untimed, longest, shortest])
  })

  it("prefers this machine's cache to the record, and its failed files first", async () => {
    const [a, b, c] = Object.keys(readDurations()).slice(0, 3)
    const sorted = await sequencer({
      [`shared:${a}`]: { duration: 1, failed: false },
      [`shared:${b}`]: { duration: 999_000, failed: false },
      [`shared:${c}`]: { duration: 5, failed: true },
    }).sort([spec(a), spec(b), spec(c)])
    expect(sorted.map((s) => s.moduleId.slice(ROOT.length + 1))).toEqual([c, b, a])
  })

  it('reads a missing or malformed record as empty, and skips entries that are not durations', () => {
    const dir = mkdtempSync(join(tmpdir(), 'dsh-test-order-'))
    try {
      expect(readDurations(join(dir, 'absent.json'))).toEqual({})
      writeFileSync(join(dir, 'bad.json'), '{ not json')
      expect(readDurations(join(dir, 'bad.json'))).toEqual({})
      writeFileSync(join(dir, 'mixed.json'), JSON.stringify({ files: { a: 2.5, b: 'slow', c: -1, d: null } }))
      expect(readDurations(join(dir, 'mixed.json'))).toEqual({ a: 2.5 })
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })
})

describe('scripts/test-durations.mjs', () => {
  const run = (...args: string[]) => spawnSync(process.execPath, [SCRIPT, ...args], { encoding: 'utf8' })

  it("writes whole-file seconds from vitest's results cache, keyed from the repository root", () => {
    const dir = mkdtempSync(join(tmpdir(), 'dsh-test-order-'))
    try {
      const cache = join(dir, 'results.json')
      writeFileSync(
        cache,
        JSON.stringify({
          version: '4.1.12',
          results: [
            ['shared:packages/x/y/test/a.test.ts', { duration: 51647.55, failed: false }],
            ['isolated:bundles/z/test/b.e2e.test.ts', { duration: 40, failed: true }],
            ['shared:packages/x/y/test/broken.test.ts', { duration: 'soon' }],
            ['shared:packages/x/y/test/negative.test.ts', { duration: -5 }],
            'not an entry',
          ],
        }),
      )
      const out = join(dir, 'durations.json')
      const r = run(cache, '--out', out)
      expect(r.stderr).toBe('')
      expect(r.status).toBe(0)
      expect(r.stdout).toContain('2 files written')
      const expected = { 'bundles/z/test/b.e2e.test.ts': 0, 'packages/x/y/test/a.test.ts': 51.6 }
      expect(JSON.parse(readFileSync(out, 'utf8')).files).toEqual(expected)
      expect(readDurations(out)).toEqual(expected)
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })

  it('refuses a report it cannot use, with a reason and status 2', () => {
    const dir = mkdtempSync(join(tmpdir(), 'dsh-test-order-'))
    try {
      const empty = join(dir, 'empty.json')
      writeFileSync(empty, JSON.stringify({ version: '4.1.12', results: [] }))
      const cases: Array<[string[], RegExp]> = [
        [[join(dir, 'absent.json'), '--out', join(dir, 'o.json')], /cannot read .*absent\.json/],
        [[empty, '--out', join(dir, 'o.json')], /has no results/],
        [['--out'], /--out needs a file/],
      ]
      for (const [args, message] of cases) {
        const r = run(...args)
        expect(r.status, args.join(' ')).toBe(2)
        expect(r.stderr).toMatch(message)
      }
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })
})
