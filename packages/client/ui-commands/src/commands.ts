// Browser-safe helpers of the command menu: which listed commands match a query, and whether a
// composer line is a command line of a listed command.
import type { CommandInfo } from '@dsh/web-protocol'
import { fuzzyScore } from '@dsh/ui-input-trigger/shared'

/** Commands matching `query` (prefix first, then fuzzy), best first. */
export function matchCommands(commands: readonly CommandInfo[], query: string): CommandInfo[] {
  const scored: Array<{ c: CommandInfo; s: number }> = []
  for (const c of commands) {
    const s = fuzzyScore(query, c.name)
    if (s !== undefined) scored.push({ c, s: s + (c.name.startsWith(query.toLowerCase()) ? 100 : 0) })
  }
  return scored.sort((a, b) => b.s - a.s || a.c.name.localeCompare(b.c.name)).map((x) => x.c)
}

/** The command a line runs (`/name` or `/name args`), when `name` is listed. */
export function commandOfLine(commands: readonly CommandInfo[], line: string): CommandInfo | undefined {
  const m = /^\/([a-z][a-z0-9_-]*)(?:\s|$)/.exec(line.trim())
  return m ? commands.find((c) => c.name === m[1]) : undefined
}
