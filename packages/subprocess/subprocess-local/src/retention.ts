// Bounded output retention: the whole stream in memory up to `maxBytes`; past it, a fixed head
// copy, a fixed-size tail ring and the complete stream in a spill file. Memory held is at most
// `maxBytes` before the cap and `headBytes + tailBytes` after it. The spill file is written
// synchronously through @dsh/spill-files (private dir, O_EXCL|O_NOFOLLOW, a per-directory byte
// budget): a full disk or the budget stops the file and is recorded, never a stuck stream.
import { randomBytes } from 'node:crypto'
import { DEFAULT_SPILL_CAP_BYTES, PrivateDir, SpillWriter, spillBudget } from '@dsh/spill-files'
import type { RetainedOutput, RetentionSpec } from '@dsh/subprocess'

export class OutputRetention {
  private total = 0
  /** Before overflow: every chunk, total <= maxBytes. */
  private chunks: Uint8Array[] = []
  private head: Buffer | undefined
  private ring: Buffer | undefined
  private ringPos = 0
  private ringFilled = 0
  private spill: SpillWriter | undefined
  private spillPath: string | undefined
  private spillError: string | undefined

  constructor(private readonly spec: RetentionSpec) {}

  /** Appends a chunk. Returns false when the source should pause until `onDrain` (never, since spill writes are synchronous). */
  push(chunk: Uint8Array): boolean {
    if (chunk.byteLength === 0) return true
    this.total += chunk.byteLength
    if (this.ring === undefined) {
      this.chunks.push(chunk)
      if (this.total <= this.spec.maxBytes) return true
      return this.overflow()
    }
    this.pushTail(chunk)
    return this.writeSpill(chunk)
  }

  /** Calls `listener` at once: nothing is ever backlogged. */
  onDrain(listener: () => void): void {
    listener()
  }

  /** Closes the spill file. Safe to call more than once; never waits on the disk. */
  async finish(): Promise<void> {
    if (!this.spill) return
    this.spill.close()
    this.noteSpill()
  }

  snapshot(): RetainedOutput {
    if (this.ring === undefined) {
      const whole = Buffer.concat(this.chunks)
      return {
        totalBytes: this.total,
        truncated: false,
        head: whole,
        tail: new Uint8Array(0),
        retainedBytes: whole.byteLength,
      }
    }
    const head = this.head ?? Buffer.alloc(0)
    const tail = this.tailBytes()
    const out: RetainedOutput = {
      totalBytes: this.total,
      truncated: true,
      head: Buffer.from(head),
      tail,
      retainedBytes: head.byteLength + this.ringFilled,
    }
    if (this.spillPath) out.spillPath = this.spillPath
    if (this.spillError) out.spillError = this.spillError
    return out
  }

  /** Switches from whole-in-memory to head + tail ring (+ spill file); every byte so far is in `chunks`. */
  private overflow(): boolean {
    const whole = Buffer.concat(this.chunks, this.total)
    this.chunks = []
    this.head = Buffer.from(whole.subarray(0, Math.min(this.spec.headBytes, whole.byteLength)))
    this.ring = Buffer.alloc(this.spec.tailBytes)
    if (this.spec.spillDir !== undefined) this.openSpill()
    // Bytes already seen go to the spill file and the tail, exactly like later chunks.
    this.pushTail(whole)
    return this.writeSpill(whole)
  }

  private openSpill(): void {
    const dir = this.spec.spillDir as string
    const name = `${this.spec.spillPrefix ?? 'output'}-${Date.now()}-${randomBytes(4).toString('hex')}.log`
    try {
      // Output may contain secrets, and the command that produced it may have planted links: a
      // private directory (real, ours, 0700) and a new 0600 file, never followed or reused. The
      // budget is shared by every stream spilling into the same directory (per session under
      // bash-sandbox, whose spill dirs are per session).
      const budget = spillBudget(`dir:${dir}`, this.spec.spillMaxBytes ?? DEFAULT_SPILL_CAP_BYTES)
      this.spill = new SpillWriter(PrivateDir.ensure(dir), name, budget)
      this.spillPath = this.spill.path
    } catch (error) {
      this.spillError = (error as Error).message
    }
  }

  private writeSpill(chunk: Uint8Array): boolean {
    if (!this.spill || this.spillError !== undefined) return true
    this.spill.write(chunk)
    this.noteSpill()
    return true
  }

  /** Keeps the writer's error, or the cap it reached, as the retention's spill error. */
  private noteSpill(): void {
    const spill = this.spill as SpillWriter
    if (this.spillError !== undefined) return
    if (spill.error) this.spillError = spill.error
    else if (spill.capped)
      this.spillError = `the spill cap of ${this.spec.spillMaxBytes ?? DEFAULT_SPILL_CAP_BYTES} bytes for ${this.spec.spillDir} was reached: ${spill.path} holds only the first ${spill.written} bytes of the output`
  }

  private pushTail(chunk: Uint8Array): void {
    const ring = this.ring as Buffer
    const size = ring.byteLength
    if (size === 0) return
    let data = chunk
    if (data.byteLength >= size) {
      data = data.subarray(data.byteLength - size)
      ring.set(data, 0)
      this.ringPos = 0
      this.ringFilled = size
      return
    }
    const first = Math.min(data.byteLength, size - this.ringPos)
    ring.set(data.subarray(0, first), this.ringPos)
    if (first < data.byteLength) ring.set(data.subarray(first), 0)
    this.ringPos = (this.ringPos + data.byteLength) % size
    this.ringFilled = Math.min(size, this.ringFilled + data.byteLength)
  }

  private tailBytes(): Buffer {
    const ring = this.ring as Buffer
    if (this.ringFilled < ring.byteLength) return Buffer.from(ring.subarray(0, this.ringFilled))
    return Buffer.concat([ring.subarray(this.ringPos), ring.subarray(0, this.ringPos)])
  }
}

/** Validates a retention spec; returns a message naming the bad field, or undefined. */
export function checkRetention(spec: RetentionSpec): string | undefined {
  for (const key of ['maxBytes', 'headBytes', 'tailBytes'] as const) {
    const value = spec[key]
    if (!Number.isSafeInteger(value) || value < 0) return `retention.${key} must be a non-negative integer`
  }
  if (spec.headBytes + spec.tailBytes > spec.maxBytes)
    return 'retention.headBytes + retention.tailBytes must not exceed retention.maxBytes'
  if (spec.spillDir !== undefined && (typeof spec.spillDir !== 'string' || spec.spillDir === ''))
    return 'retention.spillDir must be a non-empty string'
  if (spec.spillPrefix !== undefined && !/^[A-Za-z0-9_.-]{1,64}$/.test(spec.spillPrefix))
    return 'retention.spillPrefix must match [A-Za-z0-9_.-]{1,64}'
  if (spec.spillMaxBytes !== undefined && (!Number.isSafeInteger(spec.spillMaxBytes) || spec.spillMaxBytes < 0))
    return 'retention.spillMaxBytes must be a non-negative integer'
  return undefined
}
