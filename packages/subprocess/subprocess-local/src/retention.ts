// Bounded output retention: the whole stream in memory up to `maxBytes`; past it, a fixed head
// copy, a fixed-size tail ring and the complete stream in a spill file. Memory held is at most
// `maxBytes` before the cap and `headBytes + tailBytes` after it, plus the spill stream's write
// buffer, which the caller bounds by pausing its source whenever `push` returns false.
import { chmodSync, constants, createWriteStream, lstatSync, mkdirSync, openSync, type WriteStream } from 'node:fs'
import { join } from 'node:path'
import { randomBytes } from 'node:crypto'
import type { RetainedOutput, RetentionSpec } from '@dsh/subprocess'

/** Bytes the spill stream may buffer before `push` asks the source to pause. */
const SPILL_HIGH_WATER = 1 << 20

export class OutputRetention {
  private total = 0
  /** Before overflow: every chunk, total <= maxBytes. */
  private chunks: Uint8Array[] = []
  private head: Buffer | undefined
  private ring: Buffer | undefined
  private ringPos = 0
  private ringFilled = 0
  private spill: WriteStream | undefined
  private spillPath: string | undefined
  private spillError: string | undefined
  private spillDone: Promise<void> = Promise.resolve()
  private drainWaiters: Array<() => void> = []

  constructor(private readonly spec: RetentionSpec) {}

  /** Appends a chunk. Returns false when the spill file is backlogged: pause the source until `onDrain`. */
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

  /** Calls `listener` once the spill stream has drained (immediately when it is not backlogged). */
  onDrain(listener: () => void): void {
    if (!this.spill || !this.spill.writableNeedDrain) listener()
    else this.drainWaiters.push(listener)
  }

  /** Flushes and closes the spill file. Safe to call more than once. */
  async finish(): Promise<void> {
    if (this.spill && !this.spill.writableEnded) {
      const stream = this.spill
      this.spillDone = new Promise<void>((resolve) => {
        stream.once('close', () => resolve())
        stream.end()
      })
    }
    await this.spillDone
  }

  snapshot(): RetainedOutput {
    if (this.ring === undefined) {
      const whole = Buffer.concat(this.chunks)
      return { totalBytes: this.total, truncated: false, head: whole, tail: new Uint8Array(0), retainedBytes: whole.byteLength }
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
      // Output may contain secrets: the directory and files are private to this user. The command
      // that produced it may have replaced the directory with a symlink: the directory must be a
      // real one we own with no access for others, and the file is created, never followed.
      mkdirSync(dir, { recursive: true, mode: 0o700 })
      const stat = lstatSync(dir)
      if (stat.isSymbolicLink() || !stat.isDirectory()) throw new Error(`refusing to spill into ${dir}: it is ${stat.isSymbolicLink() ? 'a symbolic link' : 'not a directory'}`)
      const uid = process.getuid?.()
      if (uid !== undefined && stat.uid !== uid) throw new Error(`refusing to spill into ${dir}: it is owned by uid ${stat.uid}, not by this user`)
      if ((stat.mode & 0o077) !== 0) chmodSync(dir, 0o700)
      const path = join(dir, name)
      const fd = openSync(path, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o600)
      this.spillPath = path
      const stream = createWriteStream('', { fd, highWaterMark: SPILL_HIGH_WATER })
      stream.on('error', (error) => {
        this.spillError = error.message
        this.releaseDrain()
      })
      stream.on('drain', () => this.releaseDrain())
      this.spill = stream
    } catch (error) {
      this.spillError = (error as Error).message
    }
  }

  private writeSpill(chunk: Uint8Array): boolean {
    if (!this.spill || this.spillError !== undefined) return true
    return this.spill.write(chunk)
  }

  private releaseDrain(): void {
    const waiters = this.drainWaiters
    this.drainWaiters = []
    for (const waiter of waiters) waiter()
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
  if (spec.headBytes + spec.tailBytes > spec.maxBytes) return 'retention.headBytes + retention.tailBytes must not exceed retention.maxBytes'
  if (spec.spillDir !== undefined && (typeof spec.spillDir !== 'string' || spec.spillDir === '')) return 'retention.spillDir must be a non-empty string'
  if (spec.spillPrefix !== undefined && !/^[A-Za-z0-9_.-]{1,64}$/.test(spec.spillPrefix)) return 'retention.spillPrefix must match [A-Za-z0-9_.-]{1,64}'
  return undefined
}
