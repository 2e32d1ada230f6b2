// The small shared vocabulary every floor may import: JSON values, the coded-error base class,
// and the app lifecycle events of a booted dsh tree (emitted by @dsh/app-boot, listened to from
// every floor). Types and one class; no I/O.
import type {} from 'cordis'

/** A value that survives `JSON.parse(JSON.stringify(value))` unchanged. */
export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue }

/** A JSON object (string keys, JSON values). */
export type JsonObject = { [key: string]: JsonValue }

/**
 * An error with a stable, machine-readable `code` beside its sentence. A seam's error class extends
 * it with its code union and its own `name` (`class JobError extends CodedError<JobErrorCode>
 * { override name = 'JobError' }`); `instanceof` each subclass works as before.
 */
export class CodedError<C extends string = string> extends Error {
  constructor(
    readonly code: C,
    message: string,
    options?: ErrorOptions,
  ) {
    super(message, options)
  }
}

/** Why the app stops: a signal, `ctx.loader.exit(code)`, an idle event loop, or an embedder's dispose. */
export interface StopInfo {
  reason: 'signal' | 'exit' | 'idle' | 'dispose'
  /** The signal name when `reason` is `signal`. */
  signal?: NodeJS.Signals
  /** The exit status the process will have (a listener may change it). */
  code: number
}

declare module 'cordis' {
  interface Events {
    /** Emitted once after every row of the composition is active (never for a failed boot). */
    'app/ready'(): void | Promise<void>
    /**
     * Emitted once when a booted tree is about to be disposed, while every row is still active:
     * listeners wind down running work (agents end their turns) so its last events are still
     * logged and flushed. Awaited (bounded by `stopGraceMs`) before the rows unwind.
     */
    'app/stopping'(info: StopInfo): void | Promise<void>
  }
}
