// Released events: the payloads of events that lie behind a `surface/replace`, kept compressed.
//
// After a compaction the model never sees the replaced events again, yet faces, forks, exports
// and session-query may still read them, synchronously, through `session.events`. A released
// event stays in the log as a frozen object with the same own properties (`type`, `seq`, `time`,
// `data`) in the same order, but `data` is an enumerable getter that decodes the payload from a
// block of deflated JSON on first read (JSON, spread, structuredClone and deep equality read it
// like a plain property). The decoded payloads of a block are deep-frozen and held weakly, so a
// scan of old events decodes each block once and the garbage collector reclaims them afterwards.
import { deflateRawSync, inflateRawSync } from 'node:zlib'
import type { AnySessionEvent } from './types.ts'

/**
 * Events in one block: a read of one old event decodes this many payloads. Releases wait until
 * this many are releasable (a pruner's one-result replacements would otherwise make a tiny block
 * each, whose maps and buffers cost more than the payloads they free).
 */
export const RELEASE_BLOCK_EVENTS = 64

function deepFreeze<T>(value: T): T {
  if (value && typeof value === 'object' && !Object.isFrozen(value)) {
    for (const key of Object.keys(value)) deepFreeze((value as Record<string, unknown>)[key])
    Object.freeze(value)
  }
  return value
}

/** Where a placeholder keeps its block: a non-enumerable symbol key (JSON, keys, spread skip it). */
const BLOCK = Symbol('dsh.releasedBlock')

/**
 * The `data` getter of every placeholder: one function for all, so every placeholder has the same
 * hidden class (a getter per block would give each placeholder its own map and property array).
 */
function releasedData(this: { seq: number; [BLOCK]: ReleasedBlock }): unknown {
  return this[BLOCK].payload(this.seq)
}

/** The payloads of some events of one session log, as deflated JSON. */
class ReleasedBlock {
  /** Seqs of the events in the block, ascending (not always contiguous: live ones stay whole). */
  private readonly seqs: Int32Array
  private readonly types: readonly string[]
  private readonly bytes: Uint8Array
  private decoded: WeakRef<readonly unknown[]> | undefined

  constructor(
    events: readonly AnySessionEvent[],
    private readonly map: (type: string, data: unknown) => unknown,
  ) {
    this.seqs = Int32Array.from(events, (event) => event.seq)
    this.types = events.map((event) => event.type)
    const deflated = deflateRawSync(JSON.stringify(events.map((event) => event.data)), { level: 1 })
    // Copied to its own exact-size memory: zlib hands back a view of its 16 KB output chunk, which
    // would keep 16 KB alive for a block of a few hundred bytes.
    this.bytes = new Uint8Array(deflated.length)
    this.bytes.set(deflated)
  }

  /** Compressed size in bytes (and the memory it holds). */
  get size(): number {
    return this.bytes.buffer.byteLength
  }

  payload(seq: number): unknown {
    let all = this.decoded?.deref()
    if (!all) {
      const parsed = JSON.parse(inflateRawSync(this.bytes).toString('utf8')) as unknown[]
      all = parsed.map((data, i) => this.map(this.types[i], deepFreeze(data)))
      this.decoded = new WeakRef(all)
    }
    // Binary search: a block's seqs are ascending.
    let lo = 0
    let hi = this.seqs.length - 1
    while (lo <= hi) {
      const mid = (lo + hi) >>> 1
      const at = this.seqs[mid]
      if (at === seq) return all[mid]
      if (at < seq) lo = mid + 1
      else hi = mid - 1
    }
    throw new RangeError(`released event ${seq} is not in its block`)
  }
}

/** Whether `event` is a placeholder made by `releaseEvents` (its `data` is a getter). */
export function isReleasedEvent(event: AnySessionEvent): boolean {
  return Object.getOwnPropertyDescriptor(event, 'data')?.get === releasedData
}

/**
 * Placeholders for `events` (in seq order): frozen `{type, seq, time, data}` objects whose `data`
 * decodes the original payload on read. `map` turns a decoded payload into the value to return
 * (the session maps a released-chunk payload back to its shared constant). Returns the
 * placeholders and the compressed bytes they hold.
 */
export function releaseEvents(
  events: readonly AnySessionEvent[],
  map: (type: string, data: unknown) => unknown,
): { placeholders: AnySessionEvent[]; bytes: number } {
  const placeholders: AnySessionEvent[] = []
  let bytes = 0
  for (let start = 0; start < events.length; start += RELEASE_BLOCK_EVENTS) {
    const part = events.slice(start, start + RELEASE_BLOCK_EVENTS)
    const block = new ReleasedBlock(part, map)
    bytes += block.size
    for (const event of part) {
      const placeholder = { type: event.type, seq: event.seq, time: event.time }
      Object.defineProperty(placeholder, BLOCK, { value: block })
      Object.defineProperty(placeholder, 'data', { get: releasedData, enumerable: true })
      placeholders.push(Object.freeze(placeholder) as unknown as AnySessionEvent)
    }
  }
  return { placeholders, bytes }
}
