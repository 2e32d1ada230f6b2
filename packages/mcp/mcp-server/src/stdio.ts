// Stdout belongs to the protocol on stdio: once claimed, anything else that writes to
// process.stdout (a plugin's stray console.log) lands on stderr, and only the frames written
// through the returned stream reach the real stdout.
import { Writable } from 'node:stream'

let frames: Writable | undefined

export function claimStdout(): Writable {
  if (frames) return frames
  const stdout = process.stdout
  const original = stdout.write.bind(stdout) as (
    chunk: Uint8Array | string,
    cb: (error?: Error | null) => void,
  ) => boolean
  const stderr = process.stderr
  // A client that went away (EPIPE) ends the connection; it is not a crash.
  stdout.on('error', () => {})
  stdout.write = ((chunk: Uint8Array | string, encoding?: unknown, cb?: unknown) =>
    (stderr.write as (...args: unknown[]) => boolean)(chunk, encoding, cb)) as typeof stdout.write
  frames = new Writable({
    write(chunk: Buffer, _encoding, done) {
      original(chunk, (error) => done(error ?? undefined))
    },
  })
  frames.on('error', () => {})
  return frames
}
