// The request body as UTF-8 chunks, built incrementally. A long session sends its whole history on
// every request: serialising it again each time (JSON.stringify of megabytes, the wire objects
// before it, then encoding the string for the socket) made every step cost more as the context
// grew, and left megabytes of garbage per step. Here the encoded bytes of each history message
// are kept while recent requests still carry it, so a step encodes only what is new and hands
// the socket a list of chunks. The bytes are exactly those of
// `JSON.stringify(buildRequestBody(request, options))`: JSON.stringify of an array is its
// elements' JSON joined by commas inside brackets, and every piece below is the JSON.stringify of
// the same value the full body holds.
import type { LlmRequest, Message } from '@dsh/llm'
import { bodyAround, buildRequestBody, toWireMessage, toWireSystem, type BodyOptions } from './wire.ts'

/** One encoded body: `chunks` in order; `length` is the sum of their byte lengths. */
export interface EncodedBody {
  chunks: Uint8Array[]
  length: number
}

/** Requests a cached message may go unsent before its bytes are dropped. */
const KEEP_REQUESTS = 16
/** Stands in for the messages array while the rest of the body is serialised. */
const PLACEHOLDER = '\u0000dsh-llm-deepseek:messages\u0000'
const PLACEHOLDER_JSON = JSON.stringify(PLACEHOLDER)

const utf8 = new TextEncoder()
/**
 * UTF-8 bytes of `text` as a Buffer of their own (not a slice of Node's shared pool, which a
 * long-lived small entry would keep whole; and a Buffer, so the socket takes it without a wrapper).
 */
const encodeText = (text: string): Buffer => {
  const bytes = utf8.encode(text)
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength)
}

interface Entry {
  /** `,` then the message's wire JSON (the leading comma is skipped for a first element). */
  bytes: Uint8Array
  /** The last request that carried the message. */
  seen: number
}

/**
 * True when `value` can never change: a primitive, or a frozen object or array whose own
 * properties are all data properties (no getters) holding such values. Log messages are
 * deep-frozen when appended; a message built by a caller (a mutable object) is not, and is
 * encoded afresh every time. `verified` remembers objects already checked (frozen is forever).
 */
function immutable(value: unknown, verified: WeakSet<object>): boolean {
  if (value === null || typeof value !== 'object') return typeof value !== 'function'
  if (verified.has(value)) return true
  if (!Object.isFrozen(value)) return false
  for (const key of Reflect.ownKeys(value)) {
    const descriptor = Object.getOwnPropertyDescriptor(value, key)
    if (!descriptor || !('value' in descriptor) || !immutable(descriptor.value, verified)) return false
  }
  verified.add(value)
  return true
}

/**
 * Encodes request bodies for one adapter, reusing the bytes of every immutable history message
 * (keyed by the message object itself) that one of the last `KEEP_REQUESTS` requests carried.
 * Nothing is keyed by position: a compaction, a rewritten tool result or a restored session
 * brings new message objects, which are encoded; the old bytes are dropped once no recent request
 * has carried them.
 */
export class BodyEncoder {
  private readonly entries = new Map<Message, Entry>()
  private readonly verified = new WeakSet<object>()
  private requests = 0
  private lastSweep = 0
  private system: { text: string; bytes: Uint8Array } | undefined

  /** Entries held (for tests and diagnostics). */
  get size(): number {
    return this.entries.size
  }

  encode(request: LlmRequest, options: BodyOptions = {}): EncodedBody {
    const json = JSON.stringify(bodyAround(request, options, PLACEHOLDER))
    const at = json.indexOf(PLACEHOLDER_JSON)
    // Body fields from the effort table may replace `messages` or carry the placeholder's text:
    // then the body is serialised whole, as before.
    if (at < 0 || json.indexOf(PLACEHOLDER_JSON, at + 1) >= 0) return whole(request, options)
    const tick = ++this.requests
    const chunks: Uint8Array[] = [encodeText(`${json.slice(0, at)}[`)]
    let length = chunks[0].byteLength
    let first = true
    if (request.system) {
      if (this.system?.text !== request.system)
        this.system = { text: request.system, bytes: encodeText(JSON.stringify(toWireSystem(request.system))) }
      chunks.push(this.system.bytes)
      length += this.system.bytes.byteLength
      first = false
    }
    let used = 0
    for (const message of request.messages) {
      let bytes: Uint8Array | undefined
      const entry = this.entries.get(message)
      if (entry) {
        entry.seen = tick
        bytes = entry.bytes
        used++
      } else {
        const wire = toWireMessage(message)
        if (!wire) continue
        bytes = encodeText(`,${JSON.stringify(wire)}`)
        if (immutable(message, this.verified)) {
          this.entries.set(message, { bytes, seen: tick })
          used++
        }
      }
      if (first) {
        bytes = bytes.subarray(1)
        first = false
      }
      chunks.push(bytes)
      length += bytes.byteLength
    }
    const tail = encodeText(`]${json.slice(at + PLACEHOLDER_JSON.length)}`)
    chunks.push(tail)
    length += tail.byteLength
    this.sweep(tick, used)
    return { chunks, length }
  }

  /**
   * Drops the bytes of messages no request carried in the last `KEEP_REQUESTS`, when the cache
   * holds clearly more than this request used (so after a compaction the replaced history's bytes
   * go, while the histories of a few sessions taking turns stay). Checked at most once every
   * `KEEP_REQUESTS` requests: the walk is O(entries).
   */
  private sweep(tick: number, used: number): void {
    if (this.entries.size <= 2 * used + 64 || tick - this.lastSweep < KEEP_REQUESTS) return
    this.lastSweep = tick
    for (const [message, entry] of this.entries) if (tick - entry.seen >= KEEP_REQUESTS) this.entries.delete(message)
  }
}

function whole(request: LlmRequest, options: BodyOptions): EncodedBody {
  const bytes = encodeText(JSON.stringify(buildRequestBody(request, options)))
  return { chunks: [bytes], length: bytes.byteLength }
}

/** The chunks as one buffer (for a `fetch` that takes one body). */
export function concatBody(body: EncodedBody): Uint8Array {
  if (body.chunks.length === 1) return body.chunks[0]
  const out = new Uint8Array(body.length)
  let offset = 0
  for (const chunk of body.chunks) {
    out.set(chunk, offset)
    offset += chunk.byteLength
  }
  return out
}
