// Stdout belongs to the protocol: the claim (frames to the real stdout, stray prints to stderr,
// once per process) is @dsh/stdout-claim's, shared with `dsh mcp serve`.
import { Readable } from 'node:stream'
import { claimStdout } from '@dsh/stdout-claim'
import { guardFrames } from './framing.ts'

export { claimStdout, type FrameWriter } from '@dsh/stdout-claim'

/**
 * The protocol streams over the process's stdin and (claimed) stdout. Input lines pass through
 * `guardFrames` first: an oversized line or a request with the wrong `jsonrpc` version is answered
 * here (whole frames, written like the SDK's own) and the connection keeps serving.
 */
export function stdioStreams(options: { maxMessageBytes?: number } = {}): {
  output: WritableStream<Uint8Array>
  input: ReadableStream<Uint8Array>
} {
  const write = claimStdout()
  const output = new WritableStream<Uint8Array>({ write: (chunk) => write(chunk) })
  const raw = Readable.toWeb(process.stdin) as unknown as ReadableStream<Uint8Array>
  const input = guardFrames(raw, {
    maxMessageBytes: options.maxMessageBytes,
    reply: (frame) => write(frame).catch(() => {}),
    warn: (message) => void process.stderr.write(`dsh-acp: ${message}\n`),
  })
  return { output, input }
}
