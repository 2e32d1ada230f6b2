// Decoding of retained bytes for display. Invalid UTF-8 becomes U+FFFD, never an exception.
import type { RetainedOutput } from './types.ts'

/** Decodes bytes as UTF-8 with replacement characters. */
export function decodeOutput(bytes: Uint8Array): string {
  return new TextDecoder('utf-8', { fatal: false }).decode(bytes)
}

/** The retained bytes as one buffer when not truncated, else head and tail separately. */
export function joinRetained(output: RetainedOutput): { head: string; tail: string; omittedBytes: number } {
  const omittedBytes = output.truncated ? output.totalBytes - output.head.byteLength - output.tail.byteLength : 0
  return { head: decodeOutput(output.head), tail: decodeOutput(output.tail), omittedBytes }
}
