// The order vitest hands test files to its two workers: longest first, from the durations a run
// recorded (scripts/test-durations.json, written by scripts/test-durations.mjs from vitest's results
// cache of a whole run), so the last file of a group is a short one and neither worker idles while the other
// finishes a 20-second browser file. Vitest's own order needs its results cache, which a clean
// clone (CI) does not have; it then runs larger files (in bytes) first, and ci37 spent ~45 s with
// one worker idle at the end of the isolated group (.agents/notes/ci-time.md).
//
// Rules, in order: the project's groupOrder (the isolated files stay a group of their own, run
// first), then files this run's cache says failed last time, then files nobody has timed (new
// files: they may be heavy, and starting them early costs nothing), then the longer recorded
// duration (the local cache's when it has one, it is this machine's; else the committed one).
import { readFileSync } from 'node:fs'
import { relative } from 'node:path'
import { fileURLToPath } from 'node:url'
import { BaseSequencer, type TestSpecification } from 'vitest/node'

const durationsFile = fileURLToPath(new URL('./test-durations.json', import.meta.url))

/** The committed durations, seconds per root-relative file; empty when the file is absent or bad. */
export function readDurations(file = durationsFile): Record<string, number> {
  try {
    const parsed = JSON.parse(readFileSync(file, 'utf8')) as { files?: Record<string, unknown> }
    const out: Record<string, number> = {}
    for (const [name, value] of Object.entries(parsed.files ?? {}))
      if (typeof value === 'number' && Number.isFinite(value) && value >= 0) out[name] = value
    return out
  } catch {
    return {}
  }
}

export interface Timed {
  groupOrder: number
  project: string
  /** Seconds, or undefined when no run timed this file. */
  seconds: number | undefined
  failed: boolean
}

/** Negative when `a` runs before `b` (the rules of the header). */
export function compareTimed(a: Timed, b: Timed): number {
  if (a.groupOrder !== b.groupOrder) return a.groupOrder - b.groupOrder
  if (a.project !== b.project) return a.project < b.project ? -1 : 1
  if (a.failed !== b.failed) return a.failed ? -1 : 1
  if ((a.seconds === undefined) !== (b.seconds === undefined)) return a.seconds === undefined ? -1 : 1
  return (b.seconds ?? 0) - (a.seconds ?? 0)
}

export default class LongestFirstSequencer extends BaseSequencer {
  private readonly recorded = readDurations()

  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const root = this.ctx.config.root
    const timed = new Map<TestSpecification, Timed>()
    for (const spec of files) {
      const rel = relative(root, spec.moduleId)
      const cached = this.ctx.cache.getFileTestResults(`${spec.project.name}:${rel}`)
      timed.set(spec, {
        groupOrder: spec.project.config.sequence.groupOrder,
        project: spec.project.name,
        seconds: cached ? cached.duration / 1000 : this.recorded[rel],
        failed: Boolean(cached?.failed),
      })
    }
    return [...files].sort((a, b) => compareTimed(timed.get(a) as Timed, timed.get(b) as Timed))
  }
}
