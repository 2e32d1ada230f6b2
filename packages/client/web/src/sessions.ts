// Session actions the shell offers (new, first run, rename, fork, archive), over ctx.remote.
import type { Context } from 'cordis'
import type { SessionRow } from '@dsh/web-protocol'
import { workspacesCreate } from '@dsh/workspace/contract'

/** A title to show for a row: its title, else the start of its first prompt, else undefined. */
export function titleOf(row: SessionRow | undefined): string | undefined {
  return row?.title?.trim() || row?.firstPrompt?.trim().split('\n')[0]?.slice(0, 80) || undefined
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
