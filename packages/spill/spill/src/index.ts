// @dsh/spill: the Service Definition of the spill seam. A provider registers as `ctx.spillStore`
// and keeps the full text of an oversized tool result somewhere the model can reach later; the
// spill policy decides when to spill and what the model sees instead. No I/O here.
import { type Context, Service } from 'cordis'

/** What to keep: the whole text of one tool result. */
export interface SpillRequest {
  /** Session the result belongs to; providers scope storage by it. Absent: a harness-internal call. */
  sessionId?: string
  callId: string
  toolName: string
  text: string
}

/** Where the text went and how the model can get it back. */
export interface SpillRecord {
  /** Provider-specific address, e.g. an absolute file path. Shown to the model. */
  locator: string
  /** Bytes stored (UTF-8). */
  bytes: number
  /** One sentence telling the model how to retrieve the text through its tools. */
  hint: string
}

/** A provider failed to store the text; the policy still returns a bounded preview. */
export class SpillError extends Error {
  override name = 'SpillError'
  constructor(
    readonly code: string,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options)
  }
}

declare module 'cordis' {
  interface Context {
    spillStore: SpillStore
  }
}

/** `ctx.spillStore`. `save` stores the whole text or rejects with a SpillError; it never stores part of it silently. */
export abstract class SpillStore extends Service {
  constructor(ctx: Context) {
    super(ctx, 'spillStore')
  }

  abstract save(request: SpillRequest): Promise<SpillRecord>
}

export default SpillStore
