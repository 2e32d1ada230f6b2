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

/**
 * UTF-8 bytes of `text` in a Buffer of exactly their size and of its own: TextEncoder allocates
 * for the worst case (3 bytes per character) and keeps that capacity, and a slice of Node's shared
 * pool would keep a whole 8 KB slab alive for a small long-lived entry.
 */
const encodeText = (text: string): Buffer => {
  const bytes = Buffer.allocUnsafeSlow(Buffer.byteLength(text, 'utf8'))
  bytes.write(text, 'utf8')
  return bytes
}

interface Entry {
  /** `,` then the message's wire JSON (the leading comma is skipped for a first element). */
  bytes: Buffer
  /** The last request that carried the message. */
  seen: number
}

/** Consecutive cached messages whose bytes were joined into one buffer (one chunk to write). */
interface Block {
  messages: Message[]
  /** The entries' bytes of `messages`, in order. */
  bytes: Buffer
  /** Where each message's bytes start in `bytes`, then `bytes.byteLength`. */
  offsets: number[]
  seen: number
}

/** Consecutive loose entries joined into one block: a long history is written as few chunks. */
const BLOCK_MESSAGES = 64

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
 * Runs of `BLOCK_MESSAGES` such messages are joined into one block, reused only where the request
 * holds exactly the same message objects in the same order (checked one by one). Nothing is keyed
 * by position: a compaction, a rewritten tool result or a restored session brings new message
 * objects, which are encoded (a block they break is split back into its messages); the old bytes
 * are dropped once no recent request has carried them.
 */
export class BodyEncoder {
  private readonly entries = new Map<Message, Entry>()
  /** By their first message. */
  private readonly blocks = new Map<Message, Block>()
  private blockMessages = 0
  private readonly verified = new WeakSet<object>()
  private requests = 0
  private lastSweep = 0
  private system: { text: string; bytes: Buffer } | undefined

  /** Messages whose bytes are held (for tests and diagnostics). */
  get size(): number {
    return this.entries.size + this.blockMessages
  }

  encode(request: LlmRequest, options: BodyOptions = {}): EncodedBody {
    const json = JSON.stringify(bodyAround(request, options, PLACEHOLDER))
    const at = json.indexOf(PLACEHOLDER_JSON)
    // Body fields from the effort table may replace `messages` or carry the placeholder's text:
    // then the body is serialised whole, as before.
    if (at < 0 || json.indexOf(PLACEHOLDER_JSON, at + 1) >= 0) return whole(request, options)
    const tick = ++this.requests
    const chunks: Buffer[] = [encodeText(`${json.slice(0, at)}[`)]
    let length = chunks[0].byteLength
    let first = true
    const push = (bytes: Buffer) => {
      // The first element of the array has no comma before it.
      const chunk = first ? bytes.subarray(1) : bytes
      first = false
      chunks.push(chunk)
      length += chunk.byteLength
    }
    if (request.system) {
      if (this.system?.text !== request.system)
        this.system = { text: request.system, bytes: encodeText(`,${JSON.stringify(toWireSystem(request.system))}`) }
      push(this.system.bytes)
    }
    let used = 0
    // Cached messages sent one by one since the last block or uncached message.
    let run: Array<{ message: Message; bytes: Buffer }> = []
    const messages = request.messages
    for (let i = 0; i < messages.length; ) {
      const message = messages[i]
      const block = this.blocks.get(message)
      if (block) {
        if (sameRun(block.messages, messages, i)) {
          block.seen = tick
          push(block.bytes)
          used += block.messages.length
          i += block.messages.length
          run = []
          continue
        }
        this.split(block, tick)
      }
      i++
      const entry = this.entries.get(message)
      if (entry) {
        entry.seen = tick
        push(entry.bytes)
        used++
        run.push({ message, bytes: entry.bytes })
      } else {
        const wire = toWireMessage(message)
        if (!wire) continue
        const bytes = encodeText(`,${JSON.stringify(wire)}`)
        push(bytes)
        if (!immutable(message, this.verified)) {
          run = []
          continue
        }
        this.entries.set(message, { bytes, seen: tick })
        used++
        run.push({ message, bytes })
      }
      if (run.length === BLOCK_MESSAGES) {
        this.join(run, tick)
        run = []
      }
    }
    const tail = encodeText(`]${json.slice(at + PLACEHOLDER_JSON.length)}`)
    chunks.push(tail)
    length += tail.byteLength
    this.sweep(tick, used)
    return { chunks, length }
  }

  /** Makes one block of `run` (this request's chunks stay as they are; the next uses the block). */
  private join(run: ReadonlyArray<{ message: Message; bytes: Buffer }>, tick: number): void {
    const offsets: number[] = []
    let size = 0
    for (const { bytes } of run) {
      offsets.push(size)
      size += bytes.byteLength
    }
    offsets.push(size)
    const bytes = Buffer.allocUnsafeSlow(size)
    for (let j = 0; j < run.length; j++) {
      run[j].bytes.copy(bytes, offsets[j])
      this.entries.delete(run[j].message)
    }
    const messages = run.map((r) => r.message)
    const replaced = this.blocks.get(messages[0])
    if (replaced) this.blockMessages -= replaced.messages.length
    this.blocks.set(messages[0], { messages, bytes, offsets, seen: tick })
    this.blockMessages += messages.length
  }

  /** Turns a block back into one entry per message (views of its bytes). */
  private split(block: Block, tick: number): void {
    this.blocks.delete(block.messages[0])
    this.blockMessages -= block.messages.length
    for (let j = 0; j < block.messages.length; j++) {
      const bytes = block.bytes.subarray(block.offsets[j], block.offsets[j + 1])
      if (!this.entries.has(block.messages[j])) this.entries.set(block.messages[j], { bytes, seen: tick })
    }
  }

  /**
   * Drops the bytes of messages no request carried in the last `KEEP_REQUESTS`, when the cache
   * holds clearly more than this request used (so after a compaction the replaced history's bytes
   * go, while the histories of a few sessions taking turns stay). Checked at most once every
   * `KEEP_REQUESTS` requests: the walk is O(entries).
   */
  private sweep(tick: number, used: number): void {
    if (this.size <= 2 * used + 64 || tick - this.lastSweep < KEEP_REQUESTS) return
    this.lastSweep = tick
    for (const [message, entry] of this.entries) if (tick - entry.seen >= KEEP_REQUESTS) this.entries.delete(message)
    for (const [message, block] of this.blocks) {
      if (tick - block.seen < KEEP_REQUESTS) continue
      this.blocks.delete(message)
      this.blockMessages -= block.messages.length
    }
  }
}

/** Whether `messages` holds exactly `run` (the same objects) from `at` on. */
function sameRun(run: readonly Message[], messages: readonly Message[], at: number): boolean {
  if (at + run.length > messages.length) return false
  for (let j = 0; j < run.length; j++) if (run[j] !== messages[at + j]) return false
  return true
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
