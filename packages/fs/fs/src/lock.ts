// An in-process mutex keyed by path: the critical section of read-match-write edits and writes.

export class PathLock {
  private readonly tails = new Map<string, Promise<void>>()

  /** Runs `work` after every earlier holder of `key` has finished; holders of other keys run freely. */
  async run<T>(key: string, work: () => Promise<T>): Promise<T> {
    const previous = this.tails.get(key) ?? Promise.resolve()
    let release!: () => void
    const mine = new Promise<void>((resolve) => (release = resolve))
    const tail = previous.then(() => mine)
    this.tails.set(key, tail)
    await previous
    try {
      return await work()
    } finally {
      release()
      if (this.tails.get(key) === tail) this.tails.delete(key)
    }
  }

  /** Keys with a holder or waiters right now (for tests and diagnostics). */
  get size(): number {
    return this.tails.size
  }
}
