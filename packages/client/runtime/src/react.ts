// React bindings of the runtime: the context provider, store hooks, `<Slot>`, translation and
// session-feed hooks. Written with createElement so the package needs no JSX step.
import {
  Component,
  createContext,
  createElement,
  Fragment,
  useCallback,
  useContext,
  useEffect,
  useMemo,
  useState,
  useSyncExternalStore,
  type ErrorInfo,
  type ReactNode,
} from 'react'
import type { Context } from 'cordis'
import { originalOf } from '@dsh/cordis-compat'
import type { ReadableStore, SessionFeed, SessionFeedState } from '@dsh/client-connection'
import type { PropsOfSlot, SlotRecord } from './slots.ts'
import type { Translate } from './locale.ts'

const CordisContext = createContext<Context | null>(null)

/** Makes the root Cordis context available to `useCtx()` below it. */
export function RuntimeProvider(props: { ctx: Context; children?: ReactNode }): ReactNode {
  return createElement(CordisContext.Provider, { value: props.ctx }, props.children)
}

/** The root Cordis context of the page. */
export function useCtx(): Context {
  const ctx = useContext(CordisContext)
  if (!ctx) throw new Error('useCtx: no <RuntimeProvider> above this component')
  return ctx
}

/**
 * The object behind a Cordis service reference. `ctx.locale` (any service read through a
 * context) is a tracing proxy: every property read on it builds fresh proxies, which costs
 * measurable time in hooks that run on every render. Read-only paths (stores, lookups,
 * subscriptions) go through the plain object; calls that register effects (`register`) must
 * still go through `ctx` so they are bound to the calling plugin. A plain object is returned as is.
 */
export function plainService<T extends object>(service: T): T {
  return originalOf(service)
}

/** The plain object of a root service (read once per mounted component; see `plainService`). */
function usePlain<K extends 'locale' | 'slots' | 'connection'>(ctx: Context, name: K): Context[K] {
  return useMemo(() => plainService(ctx[name]), [ctx, name])
}

/** The current value of a runtime store, re-rendering on change. */
export function useStore<T>(store: ReadableStore<T>): T {
  return useSyncExternalStore(store.subscribe, store.get, store.get)
}

/** Entries of a slot (and key), re-rendering when they change. */
export function useSlotEntries(name: string, key?: string): readonly SlotRecord[] {
  const slots = usePlain(useCtx(), 'slots')
  // Stable callbacks: React re-subscribes whenever `subscribe` changes identity.
  const subscribe = useCallback((listener: () => void) => slots.subscribe(name, listener), [slots, name])
  const get = useCallback(() => slots.entries(name, key), [slots, name, key])
  return useSyncExternalStore(subscribe, get, get)
}

export interface SlotComponentProps<N extends string> {
  name: N
  /** Props given to every entry. */
  props?: PropsOfSlot<N>
  /** For keyed slots: render the entries of this key. */
  slotKey?: string
  /** Render only the first entry (lowest order): a single seat. */
  single?: boolean
  /** Rendered when the slot (or key) has no entry. */
  fallback?: ReactNode
}

/** Renders the entries of a named slot in order, each behind an error boundary. */
export function Slot<N extends string>(p: SlotComponentProps<N>): ReactNode {
  const entries = useSlotEntries(p.name, p.slotKey)
  if (entries.length === 0) return p.fallback ?? null
  const shown = p.single ? entries.slice(0, 1) : entries
  return createElement(
    Fragment,
    null,
    ...shown.map((record) =>
      createElement(
        SlotBoundary,
        { key: `${record.id}#${record.serial}`, record },
        createElement(record.component, (p.props ?? {}) as object),
      ),
    ),
  )
}

interface BoundaryState {
  error?: Error
}

/** One slot entry that throws while rendering shows a one-line notice instead of taking the page down. */
export class SlotBoundary extends Component<{ record: SlotRecord; children?: ReactNode }, BoundaryState> {
  override state: BoundaryState = {}

  static getDerivedStateFromError(error: Error): BoundaryState {
    return { error }
  }

  override componentDidCatch(error: Error, info: ErrorInfo): void {
    console.warn(
      `[dsh] slot ${this.props.record.slot} entry ${this.props.record.id}${this.props.record.owner ? ` (${this.props.record.owner})` : ''} failed: ${error.message}`,
      info.componentStack,
    )
  }

  override render(): ReactNode {
    if (this.state.error) {
      return createElement(
        'div',
        { role: 'alert', className: 'dsh-slot-error', 'data-slot-error': this.props.record.id },
        `${this.props.record.id}: ${this.state.error.message}`,
      )
    }
    return this.props.children
  }
}

/**
 * `t(key, vars)` of a namespace in the current language, re-rendering when it changes. The
 * function keeps its identity while the language and the dictionaries stay the same, so it can
 * be passed to memoized children without re-rendering them.
 */
export function useT(ns: string): Translate {
  const locale = usePlain(useCtx(), 'locale')
  const lang = useStore(locale.current)
  const revision = useStore(locale.revision)
  // biome-ignore lint/correctness/useExhaustiveDependencies: revision changes when dictionaries load; locale.t reads them, so t must get a new identity then
  return useMemo<Translate>(() => (key, vars) => locale.t(ns, key, vars, lang), [locale, ns, lang, revision])
}

export interface SessionFeedOptions {
  /**
   * `false`: the feed as of its last change other than streamed deltas (`feed.settled`), so the
   * component does not re-render while an answer streams. Default `true` (every publish).
   */
  deltas?: boolean
}

/** A session's feed state (log + live state) while mounted; undefined until its feed is open. */
export function useSessionFeed(
  sessionId: string | undefined,
  options: SessionFeedOptions = {},
): SessionFeedState | undefined {
  const connection = usePlain(useCtx(), 'connection')
  const [feed, setFeed] = useState<SessionFeed | undefined>(undefined)
  useEffect(() => {
    if (!sessionId) {
      setFeed(undefined)
      return
    }
    const held = connection.session(sessionId)
    setFeed(held)
    return () => held.release()
  }, [connection, sessionId])
  // Until the effect has taken its hold, show a feed that is already open (switching back to a
  // session seen a moment ago paints at once instead of flashing "loading").
  const current = feed && feed.sessionId === sessionId ? feed : sessionId ? connection.peek(sessionId) : undefined
  const store: ReadableStore<SessionFeedState> | undefined =
    current && options.deltas === false ? current.settled : current
  const subscribe = useCallback((listener: () => void) => (store ? store.subscribe(listener) : () => {}), [store])
  const get = useCallback(() => store?.get(), [store])
  return useSyncExternalStore(subscribe, get, get)
}
