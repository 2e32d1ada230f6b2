// `ctx.router`: which session the page shows, kept in the URL (`/s/<sessionId>`), with history.
import { type Context, Service } from 'cordis'
import { Store } from '@dsh/client-connection'

declare module 'cordis' {
  interface Context {
    router: Router
  }
}

export interface Route {
  sessionId?: string
}

export function parseRoute(pathname: string): Route {
  const match = /^\/s\/([^/]+)\/?$/.exec(pathname)
  if (!match) return {}
  try {
    return { sessionId: decodeURIComponent(match[1]) }
  } catch {
    return {}
  }
}

export const sessionPath = (sessionId: string): string => `/s/${encodeURIComponent(sessionId)}`

export class Router extends Service {
  readonly route: Store<Route>

  constructor(ctx: Context) {
    super(ctx, 'router')
    this.route = new Store<Route>(parseRoute(globalThis.location?.pathname ?? '/'))
    const onPop = () => this.route.set(parseRoute(globalThis.location.pathname))
    ctx.effect(() => {
      globalThis.addEventListener?.('popstate', onPop)
      return () => globalThis.removeEventListener?.('popstate', onPop)
    }, 'router: popstate')
  }

  get sessionId(): string | undefined {
    return this.route.get().sessionId
  }

  /** Shows a session (a history entry; `replace` rewrites the current one). */
  openSession(sessionId: string, options: { replace?: boolean } = {}): void {
    if (this.sessionId === sessionId) return
    const path = sessionPath(sessionId)
    const search = globalThis.location?.search ?? ''
    if (globalThis.history) {
      if (options.replace) globalThis.history.replaceState(null, '', path + search)
      else globalThis.history.pushState(null, '', path + search)
    }
    this.route.set({ sessionId })
  }
}
