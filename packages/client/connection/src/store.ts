// A tiny observable: a value, listeners, and a snapshot getter shaped for React's
// useSyncExternalStore. Every runtime service exposes its state through one of these.

export interface ReadableStore<T> {
  get(): T
  subscribe(listener: () => void): () => void
}

export class Store<T> implements ReadableStore<T> {
  private readonly listeners = new Set<() => void>()
  constructor(private value: T) {}

  get = (): T => this.value

  set(value: T): void {
    if (Object.is(value, this.value)) return
    this.value = value
    for (const listener of [...this.listeners]) listener()
  }

  update(fn: (value: T) => T): void {
    this.set(fn(this.value))
  }

  subscribe = (listener: () => void): (() => void) => {
    this.listeners.add(listener)
    return () => void this.listeners.delete(listener)
  }
}

/** Batches calls of `fn` to at most one per animation frame (per macrotask where there are no frames). */
export function frameBatcher(fn: () => void): { schedule(): void; flush(): void; cancel(): void } {
  let pending = false
  let handle: unknown
  const raf = typeof requestAnimationFrame === 'function' ? requestAnimationFrame : undefined
  const run = () => {
    if (!pending) return
    pending = false
    fn()
  }
  return {
    schedule() {
      if (pending) return
      pending = true
      handle = raf ? raf(run) : setTimeout(run, 16)
    },
    flush() {
      if (!pending) return
      if (raf) cancelAnimationFrame(handle as number)
      else clearTimeout(handle as ReturnType<typeof setTimeout>)
      run()
    },
    cancel() {
      pending = false
      if (raf) cancelAnimationFrame(handle as number)
      else clearTimeout(handle as ReturnType<typeof setTimeout>)
    },
  }
}
