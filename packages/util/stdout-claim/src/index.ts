// @dsh/stdout-claim: stdout belongs to a stdio protocol (ACP, MCP). `claimStdout()` takes the
// process's real stdout for protocol frames and points `process.stdout.write` (so console.log and
// any stray print of a plugin) at stderr. Once per process: the claim lives on globalThis, so two
// copies of this module (a source and a built one) share it, and every caller gets the same writer.
import { Writable } from 'node:stream'

const KEY = Symbol.for('dsh.stdout-claim')

/** Writes one chunk to the real stdout; resolves once it is handed to the OS, rejects on EPIPE & co. */
export type FrameWriter = (chunk: Uint8Array | string) => Promise<void>

export function claimStdout(): FrameWriter {
  const g = globalThis as { [KEY]?: FrameWriter }
  const existing = g[KEY]
  if (existing) return existing
  const stdout = process.stdout
  const original = stdout.write.bind(stdout) as (
    chunk: Uint8Array | string,
    cb: (error?: Error | null) => void,
  ) => boolean
  const stderr = process.stderr
  // A client that closes its end (EPIPE) ends the connection; it does not crash the process: the
  // failed frame write rejects, and the stream's 'error' event is handled here.
  stdout.on('error', () => {})
  stdout.write = ((chunk: Uint8Array | string, encoding?: unknown, cb?: unknown) =>
    // Redirected writes keep Node's overloads: (chunk, cb) or (chunk, encoding, cb).
    (stderr.write as (...args: unknown[]) => boolean)(chunk, encoding, cb)) as typeof stdout.write
  const write: FrameWriter = (chunk) =>
    new Promise<void>((resolve, reject) => {
      original(chunk, (error) => (error ? reject(error) : resolve()))
    })
  g[KEY] = write
  return write
}

/**
 * The claimed stdout as a Node `Writable` (what the MCP SDK's stdio transport takes). Each call
 * returns a new stream over the one claim; a failed write errors that stream (its 'error' is
 * handled, so a vanished client never crashes the process).
 */
export function claimedStdoutStream(): Writable {
  const write = claimStdout()
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      write(chunk).then(() => done(), done)
    },
  })
  stream.on('error', () => {})
  return stream
}
