// The status line under the editor: model and effort, permission mode, context use, tokens and
// cost, working directory and git branch. Fields that are unknown are left out, never guessed.
import { existsSync, readFileSync, statSync } from 'node:fs'
import { homedir } from 'node:os'
import { dirname, join } from 'node:path'
import { truncateToWidth, type Component } from '@mariozechner/pi-tui'
import type { Palette } from './theme.ts'

export interface StatusFields {
  model: string
  effort?: string
  mode?: string
  /** Input tokens of the last request and the model's context window. */
  contextUsed?: number
  contextWindow?: number
  tokensIn?: number
  tokensOut?: number
  /** Dollars, when a price is known. */
  cost?: number
  cwd: string
  branch?: string
  /** A transient hint (e.g. "press Ctrl+C again to exit"). */
  hint?: string
}

/** The branch of the git checkout containing `cwd` (read from .git/HEAD; no subprocess), or undefined. */
export function gitBranch(cwd: string): string | undefined {
  let dir = cwd
  for (let depth = 0; depth < 64; depth++) {
    const git = join(dir, '.git')
    if (existsSync(git)) {
      try {
        let gitDir = git
        if (statSync(git).isFile()) {
          const pointer = /^gitdir:\s*(.+)$/m.exec(readFileSync(git, 'utf8'))
          if (!pointer) return undefined
          gitDir = pointer[1].startsWith('/') ? pointer[1] : join(dir, pointer[1])
        }
        const head = readFileSync(join(gitDir, 'HEAD'), 'utf8').trim()
        const ref = /^ref: refs\/heads\/(.+)$/.exec(head)
        return ref ? ref[1] : head.slice(0, 8)
      } catch {
        return undefined
      }
    }
    const parent = dirname(dir)
    if (parent === dir) return undefined
    dir = parent
  }
  return undefined
}

const compact = (n: number) =>
  n >= 1_000_000 ? `${(n / 1_000_000).toFixed(1)}M` : n >= 1000 ? `${(n / 1000).toFixed(1)}k` : String(n)

export function tildePath(path: string, home = homedir()): string {
  return home && (path === home || path.startsWith(home + '/')) ? `~${path.slice(home.length)}` : path
}

export function statusText(f: StatusFields, p: Palette): string[] {
  const parts: string[] = [p.cyan(f.effort ? `${f.model} (${f.effort})` : f.model)]
  if (f.mode) parts.push(p.magenta(f.mode))
  if (f.contextUsed !== undefined && f.contextWindow)
    parts.push(`ctx ${Math.min(100, Math.round((f.contextUsed / f.contextWindow) * 100))}%`)
  if (f.tokensIn !== undefined || f.tokensOut !== undefined)
    parts.push(`↑${compact(f.tokensIn ?? 0)} ↓${compact(f.tokensOut ?? 0)}`)
  if (f.cost !== undefined) parts.push(`$${f.cost.toFixed(2)}`)
  parts.push(tildePath(f.cwd) + (f.branch ? ` ${p.green(`⎇ ${f.branch}`)}` : ''))
  return parts
}

export class StatusLine implements Component {
  constructor(
    private readonly fields: () => StatusFields,
    private readonly p: Palette,
  ) {}

  invalidate(): void {}

  render(width: number): string[] {
    const f = this.fields()
    const sep = this.p.gray(' · ')
    const line = statusText(f, this.p).join(sep)
    const out = [truncateToWidth(line, width)]
    if (f.hint) out.push(truncateToWidth(this.p.yellow(f.hint), width))
    return out
  }
}
