// Text output of `dsh sessions`: the list table and the `show` block.
import type { SessionListRow } from './index.ts'

// The list table and the age column are the terminal faces' shared ones (@dsh/surface-kit).
export { formatAge, sessionTable } from '@dsh/surface-kit'

/** Milliseconds as `850ms`, `12.3s` or `4m05s`. */
export function formatDuration(ms: number): string {
  if (ms < 1000) return `${Math.round(ms)}ms`
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)}s`
  const s = Math.round(ms / 1000)
  return `${Math.floor(s / 60)}m${String(s % 60).padStart(2, '0')}s`
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
