// The lifecycle shared by pipe and terminal processes: output fan-out and retention, the kill
// escalation (TERM, grace, KILL of the whole group), abort wiring, and the single exit record.
import type {
  OutputChunk,
  OutputStream,
  ProcessExit,
  RetainedOutput,
  RetentionMode,
  RetentionSpec,
} from '@dsh/subprocess'
import { OutputRetention } from './retention.ts'
import { waitFor } from './group.ts'

/** How a managed process reaches its processes: group signalling for pipes, session signalling for terminals. */
export interface Reach {
  alive(): boolean
  signal(signal: NodeJS.Signals): void
}

/** A pausable byte source (a pipe or a terminal). */
export interface Pausable {
  pause(): void
  resume(): void
}

export class Managed {
  pid: number | undefined
  private readonly listeners = new Set<(chunk: OutputChunk) => void>()
  private readonly retentions = new Map<'merged' | OutputStream, OutputRetention>()
  private terminatedReason: ProcessExit['terminated']
  private escalation: ProcessExit['escalation']
  private termination: Promise<void> | undefined
  private settled = false
  private resolveExit!: (exit: ProcessExit) => void
  readonly exited: Promise<ProcessExit>
  reach: Reach | undefined
  /** Ends the watchdog's guard of this process's group once the exit record is made. */
  unguard: (() => void) | undefined
  private abortCleanup: (() => void) | undefined

  constructor(
    private readonly retention: RetentionSpec | undefined,
    private readonly mode: RetentionMode,
    private readonly graceMs: number,
    private readonly onSettled: () => void,
  ) {
    this.exited = new Promise((resolve) => (this.resolveExit = resolve))
  }

  /** Terminates with reason `aborted` when `signal` aborts (immediately if it already has). */
  watchAbort(signal: AbortSignal | undefined): void {
    if (!signal) return
    const onAbort = () => void this.terminate('aborted')
    if (signal.aborted) {
      queueMicrotask(onAbort)
      return
    }
    signal.addEventListener('abort', onAbort, { once: true })
    this.abortCleanup = () => signal.removeEventListener('abort', onAbort)
  }

  onOutput(listener: (chunk: OutputChunk) => void): () => void {
    this.listeners.add(listener)
    return () => void this.listeners.delete(listener)
  }

  /** Delivers a chunk to listeners and retention; pauses `source` while a spill file is backlogged. */
  ingest(stream: OutputStream, data: Uint8Array, source: Pausable): void {
    const chunk: OutputChunk = { stream, data }
    for (const listener of this.listeners) {
      try {
        listener(chunk)
      } catch {
        // A failing listener must not break output capture for the others.
      }
    }
    if (!this.retention || this.mode === 'none') return
    const retention = this.retentionFor(stream === 'terminal' ? 'terminal' : this.mode === 'merged' ? 'merged' : stream)
    if (!retention.push(data)) {
      source.pause()
      retention.onDrain(() => source.resume())
    }
  }

  retained(): ProcessExit['output'] {
    const out: ProcessExit['output'] = {}
    for (const [key, retention] of this.retentions) out[key] = retention.snapshot()
    return out
  }

  /** Output keys that exist even when nothing was written, so consumers always find their stream. */
  ensureKeys(keys: Array<'merged' | OutputStream>): void {
    if (!this.retention || this.mode === 'none') return
    for (const key of keys) this.retentionFor(key)
  }

  private retentionFor(key: 'merged' | OutputStream): OutputRetention {
    let retention = this.retentions.get(key)
    if (!retention) {
      const spec = this.retention as RetentionSpec
      retention = new OutputRetention({ ...spec, spillPrefix: spec.spillPrefix ?? key })
      this.retentions.set(key, retention)
    }
    return retention
  }

  get done(): boolean {
    return this.settled
  }

  terminate(reason: NonNullable<ProcessExit['terminated']>): Promise<ProcessExit> {
    if (!this.settled && this.reach) {
      this.terminatedReason ??= reason
      this.termination ??= this.escalate()
    }
    return this.exited
  }

  /** Kills whatever is left of the group after the leader exited (not a termination of the call). */
  reap(): Promise<void> {
    if (!this.reach?.alive()) return Promise.resolve()
    this.termination ??= this.escalate()
    return this.termination
  }

  private async escalate(): Promise<void> {
    const reach = this.reach as Reach
    if (!reach.alive()) return
    this.escalation = 'SIGTERM'
    reach.signal('SIGTERM')
    const gone = await waitFor(() => !reach.alive(), this.graceMs)
    if (!gone) {
      this.escalation = 'SIGKILL'
      reach.signal('SIGKILL')
    }
  }

  /** Produces the exit record once; later calls are ignored. */
  async settle(fields: {
    code: number | null
    signal: string | null
    spawnError?: ProcessExit['spawnError']
  }): Promise<void> {
    if (this.settled) return
    this.settled = true
    this.abortCleanup?.()
    await Promise.all([...this.retentions.values()].map((retention) => retention.finish()))
    const output: Record<string, RetainedOutput> = {}
    for (const [key, retention] of this.retentions) output[key] = retention.snapshot()
    const exit: ProcessExit = { code: fields.code, signal: fields.signal, output }
    if (this.terminatedReason) exit.terminated = this.terminatedReason
    if (this.escalation) exit.escalation = this.escalation
    if (fields.spawnError) exit.spawnError = fields.spawnError
    this.listeners.clear()
    this.unguard?.()
    this.unguard = undefined
    this.onSettled()
    this.resolveExit(exit)
  }
}
