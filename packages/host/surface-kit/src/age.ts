// How long ago a stored session was touched, and the session table, as the terminal faces show them.

/** "just now", "5m ago", "3h ago", "2d ago" (whole units, rounded down; a future time is "just now"). */
export function formatAge(then: number, now: number = Date.now()): string {
  const seconds = Math.max(0, Math.round((now - then) / 1000))
  if (seconds < 60) return 'just now'
  if (seconds < 3600) return `${Math.floor(seconds / 60)}m ago`
  if (seconds < 86_400) return `${Math.floor(seconds / 3600)}h ago`
  return `${Math.floor(seconds / 86_400)}d ago`
}

/** The fields of a stored session that the session tables show. */
export interface SessionTableRow {
  id: string
  cwd: string
  createdAt: number
  updatedAt?: number
  turns: number
  title?: string
  firstPrompt?: string
  /** Set when the log could not be read whole: the table shows why instead of a title. */
  damaged?: string
}

const oneLine = (text: string, max = 60): string => {
  const flat = text.replace(/\s+/g, ' ').trim()
  return flat.length > max ? `${flat.slice(0, max - 3)}...` : flat
}

/**
 * The session list of `dsh sessions` and of the one-shot (`dsh --list-sessions`, `-r` without an
 * id): ID, UPDATED, TURNS, [CWD,] TITLE, every column but the last padded to its widest cell and
 * TURNS right-aligned. Scripts read these columns, so they stay as they are.
 */
export function sessionTable(rows: readonly SessionTableRow[], withCwd: boolean, now: number = Date.now()): string {
  const header = ['ID', 'UPDATED', 'TURNS', ...(withCwd ? ['CWD'] : []), 'TITLE']
  const cells = rows.map((r) => [
    r.id,
    formatAge(r.updatedAt ?? r.createdAt, now),
    String(r.turns),
    ...(withCwd ? [r.cwd] : []),
    r.damaged !== undefined
      ? `(damaged: ${oneLine(r.damaged)})`
      : oneLine(r.title ?? r.firstPrompt ?? '') || '(no prompt)',
  ])
  const all = [header, ...cells]
  const widths = header.map((_, i) => Math.max(...all.map((row) => row[i].length)))
  const line = (row: string[]) =>
    row
      .map((cell, i) => (i === row.length - 1 ? cell : i === 2 ? cell.padStart(widths[i]) : cell.padEnd(widths[i])))
      .join('  ')
  return `${all.map(line).join('\n')}\n`
}
