// `ctx.catalog`: the sessions and workspaces the sidebar shows, kept current from the host stream
// (`session/added`, `session/changed`, `session/status`, `workspace/changed`) and refetched after
// every reconnect.
import { type Context, Service } from 'cordis'
import type { HostStreamEvent, SessionRow } from '@dsh/web-protocol'
import { sessionsList } from '@dsh/web-protocol'
import { workspacesList, type WireWorkspace } from '@dsh/workspace/contract'
import { Store, type Connection, type Remote } from '@dsh/client-connection'

declare module 'cordis' {
  interface Context {
    catalog: Catalog
  }
}

export interface CatalogState {
  /** Newest first (by `updatedAt`); archived sessions are left out. */
  sessions: readonly SessionRow[]
  workspaces: readonly WireWorkspace[]
  loaded: boolean
  /** Why the last refresh failed, when it did. */
  error?: string
}

const PAGE = 500

export class Catalog extends Service {
  static inject = ['remote', 'connection']
  readonly state = new Store<CatalogState>({ sessions: [], workspaces: [], loaded: false })
  private readonly rows = new Map<string, SessionRow>()
  private refreshing?: Promise<void>

  constructor(ctx: Context) {
    super(ctx, 'catalog')
  }

  private get remote(): Remote {
    return (this.ctx as unknown as { remote: Remote }).remote
  }

  private get connection(): Connection {
    return (this.ctx as unknown as { connection: Connection }).connection
  }

  async [Service.init](): Promise<void> {
    this.connection.onHost((event) => this.onHost(event))
    this.ctx.effect(() => () => clearTimeout(this.refreshTimer), 'catalog: refresh timer')
    void this.refresh().catch(() => {})
  }

  get(sessionId: string): SessionRow | undefined {
    return this.rows.get(sessionId)
  }

  /** Refetches both lists (paged: every session, not just the first page). */
  refresh(): Promise<void> {
    if (this.refreshing !== undefined) return this.refreshing
    this.refreshing = (async () => {
      try {
        const sessions: SessionRow[] = []
        let offset = 0
        for (;;) {
          const page = await this.remote.call(sessionsList, { offset, limit: PAGE, includeArchived: false })
          sessions.push(...page.sessions)
          if (page.nextOffset === undefined || page.sessions.length === 0) break
          offset = page.nextOffset
        }
        let workspaces: WireWorkspace[] = []
        try {
          workspaces = (await this.remote.call(workspacesList, {})).workspaces ?? []
        } catch {
          // no workspace row mounted: sessions are grouped by directory only
        }
        this.rows.clear()
        for (const row of sessions) this.rows.set(row.sessionId, row)
        this.publish({ workspaces, loaded: true, error: undefined })
      } catch (error) {
        this.publish({ error: (error as Error).message, loaded: this.state.get().loaded })
        throw error
      } finally {
        this.refreshing = undefined
      }
    })()
    return this.refreshing
  }

  /** Puts a row the caller got from a method answer (create, rename, fork) in place at once. */
  upsert(row: SessionRow): void {
    this.rows.set(row.sessionId, row)
    this.publish({})
  }

  private onHost(event: HostStreamEvent): void {
    switch (event.type) {
      case 'connection/reset':
        void this.refresh().catch(() => {})
        return
      case 'session/added':
      case 'session/changed': {
        const row = (event as { session: SessionRow }).session
        if (row?.sessionId) this.upsert(row)
        return
      }
      case 'session/status': {
        const e = event as { sessionId: string; status: SessionRow['status']; queued: number }
        const row = this.rows.get(e.sessionId)
        if (row) this.upsert({ ...row, status: e.status, queued: e.queued })
        // A status change of an untitled session usually means its first prompt arrived: the
        // host sends no session/changed for that, so refetch (debounced) to get firstPrompt.
        if (!row || (!row.title && !row.firstPrompt)) this.scheduleRefresh()
        return
      }
      case 'session/removed':
        this.rows.delete((event as { sessionId: string }).sessionId)
        this.publish({})
        return
      case 'workspace/changed': {
        const list = (event as { workspaces?: WireWorkspace[] }).workspaces
        if (Array.isArray(list)) this.publish({ workspaces: list })
        return
      }
    }
  }

  private refreshTimer?: ReturnType<typeof setTimeout>

  private scheduleRefresh(): void {
    if (this.refreshTimer) return
    this.refreshTimer = setTimeout(() => {
      this.refreshTimer = undefined
      void this.refresh().catch(() => {})
    }, 300)
  }

  private publish(patch: Partial<CatalogState>): void {
    const sessions = [...this.rows.values()]
      .filter((r) => !r.archived)
      .sort((a, b) => b.updatedAt - a.updatedAt || (a.sessionId < b.sessionId ? 1 : -1))
    this.state.set({ ...this.state.get(), ...patch, sessions })
  }
}
