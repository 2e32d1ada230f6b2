// Giving memory back to the system after a compaction.
//
// A long session grows V8's heap to fit its largest moment: the young generation reaches its
// maximum (32 MB on 64-bit Node 20) once enough objects have survived, and the old generation
// keeps the pages it grew into while the context was at its largest. After a compaction the live
// data is much smaller, yet V8's ordinary collections neither shrink the young generation nor
// compact every old page, so resident memory stays at its peak (or grows with the summary step).
//
// Node 20 has no public call for V8's memory-reducing collection (`LowMemoryNotification` and
// `MemoryPressureNotification` are not exposed). `v8.queryObjects()` (Node >= 20.13) starts with
// exactly that collection (V8's `CollectAllAvailableGarbage`: repeated full collections flagged to
// reduce memory, which shrink the young generation, compact the old one and release the freed
// pages), then walks the heap counting instances of a class; asked about a class that has none,
// the walk finds nothing. Measured: 60-100 ms of CPU on a 40-100 MB heap, RSS down by the young
// generation and the old generation's slack (see .agents/notes/long-session-rss-fall.md).
import v8 from 'node:v8'

/** A class with no instances: the heap walk after the collection matches nothing. */
class NoInstances {}

export interface ReclaimResult {
  /** Resident set size before and after, in bytes. */
  rssBefore: number
  rssAfter: number
  /** CPU the collection took (user + system), in milliseconds. */
  cpuMs: number
}

type QueryObjects = (ctor: unknown, options: { format: 'count' }) => number

export interface ReclaimOptions {
  /**
   * Skip the collection unless V8 holds at least this many committed bytes it is not using
   * (summed over its spaces: a grown young generation, old-space pages left by garbage). A small
   * heap has little to give back for the pause. Default 0: always collect.
   */
  minSlackBytes?: number
}

/** Bytes V8 has committed but holds no objects in (young generation and free old-space pages). */
export function heapSlack(): number {
  let slack = 0
  for (const space of v8.getHeapSpaceStatistics())
    slack += Math.max(0, space.physical_space_size - space.space_used_size)
  return slack
}

/**
 * Runs V8's memory-reducing full collection now (synchronously) and reports RSS around it.
 * Returns undefined when this Node has no way to ask for it (no `v8.queryObjects`) or when the
 * heap's slack is under `minSlackBytes`.
 */
export function reclaimMemory(options: ReclaimOptions = {}): ReclaimResult | undefined {
  const query = (v8 as unknown as { queryObjects?: QueryObjects }).queryObjects
  if (typeof query !== 'function') return undefined
  if (options.minSlackBytes && heapSlack() < options.minSlackBytes) return undefined
  const rssBefore = process.memoryUsage.rss()
  const cpu = process.cpuUsage()
  // `queryObjects` is marked experimental and warns once on stderr; the call is used only for the
  // collection it starts, so that one warning (and no other) is kept off the user's terminal.
  const emitWarning = process.emitWarning
  process.emitWarning = function (this: NodeJS.Process, warning: string | Error, ...rest: unknown[]) {
    const text = typeof warning === 'string' ? warning : warning.message
    if (text.includes('queryObjects')) return
    return (emitWarning as (...args: unknown[]) => void).call(this, warning, ...rest)
  } as typeof process.emitWarning
  try {
    query(NoInstances, { format: 'count' })
  } finally {
    process.emitWarning = emitWarning
  }
  const used = process.cpuUsage(cpu)
  return { rssBefore, rssAfter: process.memoryUsage.rss(), cpuMs: (used.user + used.system) / 1000 }
}
