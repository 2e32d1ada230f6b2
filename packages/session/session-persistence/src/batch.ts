// Per-session write batching: records queue up for a short fixed window after the first pending
// one, then go to the backend as one durable write. Writes of one session never overlap.
import type { StoredRecord } from './types.ts'

interface Waiter {
  resolve: () => void
  reject: (error: unknown) => void
}

export class BatchWriter {
  private pending: StoredRecord[] = []
  private waiters: Waiter[] = []
  private timer: ReturnType<typeof setTimeout> | undefined
  private chain: Promise<void> = Promise.resolve()

  constructor(
    private readonly write: (records: StoredRecord[]) => Promise<void>,
    private readonly windowMs: number,
  ) {}

  get size(): number {
    return this.pending.length
  }

  /** Queues records; resolves once they are durable, rejects when their write failed. */
  add(records: StoredRecord[]): Promise<void> {
    if (records.length === 0) return this.flush()
    const done = new Promise<void>((resolve, reject) => this.waiters.push({ resolve, reject }))
    this.pending.push(...records)
    if (this.timer === undefined) {
      this.timer = setTimeout(() => {
        this.timer = undefined
        void this.drain().catch(() => {})
      }, this.windowMs)
    }
    return done
  }

  /** Writes everything pending now; resolves once every record queued before the call is durable. */
  async flush(): Promise<void> {
    if (this.timer !== undefined) {
      clearTimeout(this.timer)
      this.timer = undefined
    }
    await this.drain()
  }

  /** Cancels the timer; pending records stay pending (call `flush()` first to keep them). */
  stop(): void {
    if (this.timer !== undefined) clearTimeout(this.timer)
    this.timer = undefined
  }

  private drain(): Promise<void> {
    const run = this.chain.then(async () => {
      if (this.pending.length === 0) return
      const records = this.pending
      const waiters = this.waiters
      this.pending = []
      this.waiters = []
      try {
        await this.write(records)
      } catch (error) {
        // Keep the records at the head so seq stays contiguous; the next flush retries them.
        this.pending = [...records, ...this.pending]
        for (const waiter of waiters) waiter.reject(error)
        throw error
      }
      for (const waiter of waiters) waiter.resolve()
    })
    this.chain = run.catch(() => {})
    return run
  }
}
