// A readers-writer gate for one program's tool calls: concurrency-safe calls share it, any other
// call runs alone, mirroring how the registry orders the calls of one model step.
export class CallGate {
  private shared = 0
  private exclusive = false
  private readonly waiting: Array<{ exclusive: boolean; wake: () => void }> = []

  async enter(exclusive: boolean): Promise<() => void> {
    if (!this.admit(exclusive)) await new Promise<void>((wake) => this.waiting.push({ exclusive, wake }))
    let released = false
    return () => {
      if (released) return
      released = true
      if (exclusive) this.exclusive = false
      else this.shared--
      this.drain()
    }
  }

  private admit(exclusive: boolean): boolean {
    // Waiters keep their order: nobody passes a queued caller.
    if (this.waiting.length > 0 || this.exclusive) return false
    if (exclusive && this.shared > 0) return false
    if (exclusive) this.exclusive = true
    else this.shared++
    return true
  }

  private drain(): void {
    while (this.waiting.length > 0) {
      const next = this.waiting[0]
      if (this.exclusive || (next.exclusive && this.shared > 0)) return
      this.waiting.shift()
      if (next.exclusive) this.exclusive = true
      else this.shared++
      next.wake()
    }
  }
}
