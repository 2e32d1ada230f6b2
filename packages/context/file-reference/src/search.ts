// The workspace file list (ripgrep --files: .gitignore and hidden files respected) and the fuzzy
// ranking of mention candidates. ripgrep starts through `ctx.subprocess` (scrubbed environment,
// its own process group, killed with the call), like every program dsh starts.
import { rgPath } from '@vscode/ripgrep'
import type { SubprocessService } from '@dsh/subprocess'

export interface Listing {
  files: string[]
  truncated: boolean
  at: number
}

/** Every non-ignored file under `cwd`, relative with forward slashes, at most `max`. Rejects when ripgrep cannot start. */
export async function listFiles(
  subprocess: Pick<SubprocessService, 'spawn'>,
  cwd: string,
  max: number,
  timeoutMs = 10_000,
  signal?: AbortSignal,
): Promise<Listing> {
  const stop = new AbortController()
  const timer = setTimeout(() => stop.abort(), timeoutMs)
  const onAbort = () => stop.abort()
  signal?.addEventListener('abort', onAbort, { once: true })
  const files: string[] = []
  let rest = ''
  let truncated = false
  const decoder = new TextDecoder()
  try {
    const handle = subprocess.spawn({
      file: rgPath,
      args: ['--no-config', '--files', '--no-require-git', '--color', 'never', '--no-messages'],
      cwd,
      env: { base: 'scrubbed' },
      stdin: 'ignore',
      kill: { graceMs: 200 },
      signal: stop.signal,
      retentionMode: 'none',
    })
    handle.onOutput((chunk) => {
      if (chunk.stream !== 'stdout' || truncated) return
      const lines = (rest + decoder.decode(chunk.data, { stream: true })).split('\n')
      rest = lines.pop() ?? ''
      for (const line of lines) {
        if (!line) continue
        if (files.length >= max) {
          truncated = true
          stop.abort()
          return
        }
        files.push(line.replace(/^\.\//, '').replace(/\\/g, '/'))
      }
    })
    const exit = await handle.exited
    if (exit.spawnError) throw new Error(`ripgrep could not be started: ${exit.spawnError.message}`)
    // Stopped by the timeout or the caller: what was listed so far, marked as cut.
    if (exit.terminated === 'aborted') truncated = true
    rest += decoder.decode()
    if (!truncated && rest && files.length < max) files.push(rest.replace(/^\.\//, ''))
    return { files, truncated, at: Date.now() }
  } finally {
    clearTimeout(timer)
    signal?.removeEventListener('abort', onAbort)
  }
}

/** Subsequence score (higher is better); undefined when `query` is not a subsequence. */
export function score(query: string, path: string): number | undefined {
  if (!query) return 0
  const q = query.toLowerCase()
  const t = path.toLowerCase()
  let s = 0
  let from = 0
  let last = -2
  for (const ch of q) {
    const at = t.indexOf(ch, from)
    if (at < 0) return undefined
    s += at === last + 1 ? 4 : 1
    if (at === 0 || '/._-'.includes(t[at - 1])) s += 2
    last = at
    from = at + 1
  }
  const base = t.slice(t.lastIndexOf('/') + 1)
  if (base.startsWith(q)) s += 12
  else if (base.includes(q)) s += 6
  if (t.startsWith(q)) s += 8
  return s - t.length / 200
}

export function rank(files: readonly string[], query: string, limit: number): string[] {
  if (!query)
    return [...files].sort((a, b) => a.split('/').length - b.split('/').length || a.localeCompare(b)).slice(0, limit)
  const hits: Array<{ f: string; s: number }> = []
  for (const f of files) {
    const s = score(query, f)
    if (s !== undefined) hits.push({ f, s })
  }
  return hits
    .sort((a, b) => b.s - a.s || a.f.localeCompare(b.f))
    .slice(0, limit)
    .map((h) => h.f)
}
