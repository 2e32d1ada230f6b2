// Session actions the shell offers (new, first run, rename, fork, archive), over ctx.remote.
import type { Context } from 'cordis'
import type { SessionRow } from '@dsh/web-protocol'
import { workspacesCreate } from '@dsh/workspace/contract'

/** A title to show for a row: its title, else the words of its first prompt, else undefined. */
export function titleOf(row: SessionRow | undefined): string | undefined {
  return cleanTitle(row?.title) || cleanTitle(row?.firstPrompt) || undefined
}

/**
 * The readable words of a title or prompt, without the directives a prompt may carry: tagged
 * blocks (`<system-reminder>…</system-reminder>`, `<command-name>…`), a leading slash command
 * (`/goal`, `/plan`), session mentions (`@session:<id>`), and `@` before a mentioned path (the
 * path's last segment stays, as a word). The first non-empty line, at most 80 characters.
 */
export function cleanTitle(text: string | undefined): string {
  if (!text) return ''
  const words = text
    .replace(/<([a-z][\w-]*)(\s[^>]*)?>[\s\S]*?<\/\1>/gi, ' ')
    .replace(/<\/?[a-z][\w-]*(\s[^>]*)?\/?>/gi, ' ')
    .replace(/(^|\s)@session:\S+/g, ' ')
    .replace(/(^|\s)@(\S+)/g, (_m, pre: string, path: string) => `${pre}${path.replace(/\/+$/, '').split('/').pop()}`)
  for (const raw of words.split('\n')) {
    const line = raw
      .replace(/^\s*\/[\w:-]+(?=\s|$)/, '')
      .replace(/\s+/g, ' ')
      .trim()
    if (line) return line.length > 80 ? `${line.slice(0, 79)}…` : line
  }
  return ''
}

const UNITS: Array<[number, Intl.RelativeTimeFormatUnit]> = [
  [60, 'second'],
  [60, 'minute'],
  [24, 'hour'],
  [7, 'day'],
  [4.35, 'week'],
  [12, 'month'],
  [Number.POSITIVE_INFINITY, 'year'],
]

/** `updatedAt` as a short relative time ("5 min. ago", "yesterday") in the page's language. */
export function relativeTime(time: number, now: number, lang: string): string {
  let value = (time - now) / 1000
  if (Math.abs(value) < 45) return lang === 'zh' ? '刚刚' : 'just now'
  for (const [size, unit] of UNITS) {
    if (Math.abs(value) < size) return relativeFormat(lang).format(Math.round(value), unit)
    value /= size
  }
  return ''
}

const formats = new Map<string, Intl.RelativeTimeFormat>()
function relativeFormat(lang: string): Intl.RelativeTimeFormat {
  let f = formats.get(lang)
  if (!f) formats.set(lang, (f = new Intl.RelativeTimeFormat(lang, { numeric: 'auto', style: 'short' })))
  return f
}

const opening = new WeakMap<Context, Map<string, Promise<SessionRow>>>()

/**
 * An empty session in `cwd` (an existing one, else a new one). Calls for the same folder while one
 * is in flight share it: the first-run session of a page that just opened and a "New session"
 * clicked meanwhile are one session, so a prompt typed into the first is never left behind in a
 * session the page then navigates away from.
 */
export function openFreshSession(ctx: Context, cwd: string): Promise<SessionRow> {
  let byCwd = opening.get(ctx)
  if (!byCwd) opening.set(ctx, (byCwd = new Map()))
  const pending = byCwd.get(cwd)
  if (pending !== undefined) return pending
  const started = createFreshSession(ctx, cwd).finally(() => byCwd.delete(cwd))
  byCwd.set(cwd, started)
  return started
}

/**
 * Reuses the newest empty (no turn yet) session in `cwd`, else creates one. Registers the folder as
 * a workspace first when the workspace service exists.
 */
async function createFreshSession(ctx: Context, cwd: string): Promise<SessionRow> {
  let workspaceId: string | undefined
  try {
    workspaceId = (await ctx.remote.call(workspacesCreate, { path: cwd })).workspace?.id
  } catch {
    // no workspace row, or a remote browser: the cwd alone is enough
  }
  await ctx.catalog.refresh().catch(() => {})
  const empty = ctx.catalog.state
    .get()
    .sessions.find((r) => r.cwd === cwd && r.turns === 0 && r.queued === 0 && r.status !== 'running')
  if (empty) return empty
  const { session } = await ctx.remote.call('sessions.create', workspaceId ? { workspaceId } : { cwd })
  ctx.catalog.upsert(session)
  return session
}

export async function renameSession(ctx: Context, row: SessionRow, title: string): Promise<void> {
  const { session } = await ctx.remote.call('sessions.rename', { sessionId: row.sessionId, title })
  ctx.catalog.upsert(session)
}

export async function forkSession(ctx: Context, row: SessionRow): Promise<SessionRow> {
  const { session } = await ctx.remote.call('sessions.fork', { sessionId: row.sessionId })
  ctx.catalog.upsert(session)
  return session
}

export async function archiveSession(ctx: Context, row: SessionRow): Promise<void> {
  const { session } = await ctx.remote.call('sessions.archive', { sessionId: row.sessionId, archived: true })
  ctx.catalog.upsert(session)
}

/** A folder of the sidebar with its sessions (newest first, as the catalog orders them). */
export interface Group {
  key: string
  name: string
  path: string
  rows: SessionRow[]
}

/**
 * Workspaces in the user's order (each even when empty, unless searching), then other folders in
 * the order of their newest session; a query keeps the sessions whose title contains it.
 */
export function groupSessions(
  sessions: readonly SessionRow[],
  workspaces: readonly { id: string; name: string; path: string }[],
  query: string,
): Group[] {
  const q = query.trim().toLowerCase()
  const rows = q ? sessions.filter((r) => (titleOf(r) ?? '').toLowerCase().includes(q)) : sessions
  const groups = new Map<string, Group>()
  for (const w of workspaces) groups.set(w.path, { key: w.id, name: w.name, path: w.path, rows: [] })
  for (const row of rows) {
    let group = groups.get(row.cwd)
    if (!group)
      groups.set(
        row.cwd,
        (group = { key: row.cwd, name: row.cwd.split('/').filter(Boolean).pop() ?? row.cwd, path: row.cwd, rows: [] }),
      )
    group.rows.push(row)
  }
  return [...groups.values()].filter((g) => g.rows.length > 0 || !q)
}
