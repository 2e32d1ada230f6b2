// Small helpers of the e2b world: waits, retry classification, patch and shell text.
import { RateLimitError, SandboxError } from 'e2b'
import { existsSync, readFileSync, statSync } from 'node:fs'
import { E2bError } from './types.ts'

export const sleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve) => {
    // Not unref'd: at the end of a one-shot run this wait may be all that keeps the process alive.
    const timer = setTimeout(done, ms)
    signal?.addEventListener('abort', done, { once: true })
    function done() {
      clearTimeout(timer)
      signal?.removeEventListener('abort', done)
      resolve()
    }
  })

/** A control-plane answer worth retrying: 429 (rate limit) or a 5xx. */
export function isTransient(error: unknown): boolean {
  return error instanceof RateLimitError || (error instanceof SandboxError && /^5\d\d:/.test(error.message))
}

export const interrupted = (when: string) => new E2bError('INTERRUPTED', `the app is stopping: interrupted ${when}`)

/** The paths a git patch touches (`diff --git a/X b/Y` headers, the new name). */
export function patchFiles(patch: string): string[] {
  const names = new Set<string>()
  for (const match of patch.matchAll(/^diff --git a\/(.+?) b\/(.+)$/gm)) names.add(match[2])
  return [...names]
}

export function readFileSafe(file: string): string {
  try {
    return readFileSync(file, 'utf8')
  } catch {
    return ''
  }
}

export const firstLine = (text: string) => text.trim().split('\n')[0] ?? ''

export function isDirectory(path: string): boolean {
  try {
    return existsSync(path) && statSync(path).isDirectory()
  } catch {
    return false
  }
}

/** POSIX single-quoting for one shell word. */
export function quote(word: string): string {
  return /^[A-Za-z0-9_@%+=:,./-]+$/.test(word) ? word : `'${word.replace(/'/g, `'"'"'`)}'`
}
