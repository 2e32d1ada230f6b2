// Text output of `dsh sessions`: the list table and the `show` block.
import type { SessionListRow } from './index.ts'

/** "just now", "5m ago", "3h ago", "2d ago". */
export function formatAge(then: number, now = Date.now()): string {
  const s = Math.max(0, Math.round((now - then) / 1000))
  if (s < 60) return 'just now'
  if (s < 3600) return `${Math.floor(s / 60)}m ago`
  if (s < 86_400) return `${Math.floor(s / 3600)}h ago`
  return `${Math.floor(s / 86_400)}d ago`
}

/** Milliseconds as `850ms`, `12.3s` or `4m05s`. */
export function formatDuration(ms: number): string {
  if (ms < 1000) return `${Math.round(ms)}ms`
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)}s`
  const s = Math.round(ms / 1000)
  return `${Math.floor(s / 60)}m${String(s % 60).padStart(2, '0')}s`
}

const oneLine = (text: string, max = 60) => {
  const flat = text.replace(/\s+/g, ' ').trim()
  return flat.length > max ? flat.slice(0, max - 3) + '...' : flat
}

/** An aligned table: every column but the last padded to its widest cell. */
export function sessionTable(rows: SessionListRow[], withCwd: boolean, now = Date.now()): string {
  // The columns `dsh sessions` always had (scripts read them); token figures are in `show` and JSON.
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
  const right = new Set([2])
  return (
    all
      .map((row) =>
        row
          .map((cell, i) =>
            i === row.length - 1 ? cell : right.has(i) ? cell.padStart(widths[i]) : cell.padEnd(widths[i]),
          )
          .join('  '),
      )
      .join('\n') + '\n'
  )
}

/** The `show` block: identity, then whole-session figures, then one line per turn. */
export function formatStats(row: SessionListRow): string {
  const lines = [
    `session   ${row.id}`,
    `title     ${row.title ?? '(none)'}${row.titleSource ? ` (${row.titleSource})` : ''}`,
    `cwd       ${row.cwd}`,
    `created   ${new Date(row.createdAt).toISOString()}`,
    `updated   ${new Date(row.updatedAt).toISOString()}`,
  ]
  if (row.parentSession) lines.push(`parent    ${row.parentSession.sessionId} (at ${row.parentSession.boundary})`)
  if (row.damaged !== undefined) lines.push(`damaged   ${row.damaged}`)
  const s = row.stats
  if (s) {
    const t = s.tokens
    lines.push(
      `model     ${s.model ? `${s.model.provider}/${s.model.model}` : '-'}`,
      `turns     ${s.turns}   steps ${s.steps}   model calls ${s.modelCalls}`,
      `tokens    input ${t.input}   output ${t.output}   cache read ${t.cacheRead}   cache write ${t.cacheWrite}   reasoning ${t.reasoning}`,
      `cost      ${s.cost !== undefined ? `${s.cost.toFixed(4)} ${s.currency ?? ''}`.trim() + (s.unpricedCalls ? ` (+${s.unpricedCalls} unpriced calls)` : '') : 'unknown (no price configured)'}`,
      `time      model ${formatDuration(s.modelMs)}   first token ${s.firstTokenCalls ? formatDuration(s.firstTokenMs / s.firstTokenCalls) : '-'} avg   decode ${formatDuration(s.decodeMs)}   tools ${formatDuration(s.toolMs)}`,
    )
    const tc = s.titleCalls
    if (tc && tc.calls > 0) {
      const u = tc.tokens
      lines.push(
        `titling   ${tc.calls} model call${tc.calls === 1 ? '' : 's'} (not turns; in the totals above)   input ${u.input}   output ${u.output}   cache read ${u.cacheRead}   cache write ${u.cacheWrite}   reasoning ${u.reasoning}` +
          (tc.cost !== undefined ? `   cost ${`${tc.cost.toFixed(4)} ${tc.currency ?? ''}`.trim()}` : ''),
      )
    }
    const tools = Object.entries(s.tools).sort((a, b) => b[1].ms - a[1].ms)
    if (tools.length)
      lines.push(
        `tools     ${tools.map(([name, f]) => `${name} ${f.calls}x ${formatDuration(f.ms)}${f.errors ? ` (${f.errors} failed)` : ''}`).join(', ')}`,
      )
    for (const turn of s.perTurn) {
      const sum = turn.tokens.input + turn.tokens.cacheRead + turn.tokens.cacheWrite
      lines.push(
        `  turn ${turn.turn}  ${turn.reason ?? 'open'}  steps ${turn.steps}  calls ${turn.modelCalls}  in ${sum} out ${turn.tokens.output}  model ${formatDuration(turn.modelMs)}  tools ${formatDuration(turn.toolMs)}`,
      )
    }
  }
  return lines.join('\n') + '\n'
}
