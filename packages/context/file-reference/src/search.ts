// The workspace file list (ripgrep --files: .gitignore and hidden files respected) and the fuzzy
// ranking of mention candidates.
import { spawn } from 'node:child_process'
import { rgPath } from '@vscode/ripgrep'

export interface Listing { files: string[]; truncated: boolean; at: number }

/** Every non-ignored file under `cwd`, relative with forward slashes, at most `max`. */
export function listFiles(cwd: string, max: number, timeoutMs = 10_000): Promise<Listing> {
  return new Promise((resolvePromise, reject) => {
    const child = spawn(rgPath, ['--no-config', '--files', '--no-require-git', '--color', 'never', '--no-messages'], { cwd, stdio: ['ignore', 'pipe', 'pipe'] })
    const files: string[] = []
    let rest = ''
    let truncated = false
    const timer = setTimeout(() => {
      truncated = true
      child.kill('SIGKILL')
    }, timeoutMs)
    child.stdout.setEncoding('utf8')
    child.stdout.on('data', (chunk: string) => {
      if (truncated) return
      const lines = (rest + chunk).split('\n')
      rest = lines.pop() ?? ''
      for (const line of lines) {
        if (!line) continue
        if (files.length >= max) {
          truncated = true
          child.kill('SIGKILL')
          return
        }
        files.push(line.replace(/^\.\//, '').replace(/\\/g, '/'))
      }
    })
    child.on('error', (error) => {
      clearTimeout(timer)
      reject(new Error(`ripgrep could not be started: ${error.message}`))
    })
    child.on('close', () => {
      clearTimeout(timer)
      if (!truncated && rest && files.length < max) files.push(rest.replace(/^\.\//, ''))
      resolvePromise({ files, truncated, at: Date.now() })
    })
  })
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
  if (!query) return [...files].sort((a, b) => a.split('/').length - b.split('/').length || a.localeCompare(b)).slice(0, limit)
  const hits: Array<{ f: string; s: number }> = []
  for (const f of files) {
    const s = score(query, f)
    if (s !== undefined) hits.push({ f, s })
  }
  return hits.sort((a, b) => b.s - a.s || a.f.localeCompare(b.f)).slice(0, limit).map((h) => h.f)
}
