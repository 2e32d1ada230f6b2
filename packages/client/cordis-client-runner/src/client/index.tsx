// @dsh/cordis-client-runner/client: runs the browser halves of model-written plugins in the page.
// A **Plugin views** section of the side panel holds, for each running browser half of the open
// session, an `<iframe sandbox="allow-scripts">` (no allow-same-origin: an opaque origin) on the
// host's frame route, which serves the approved code under its own strict CSP. The page and a
// frame talk only by postMessage: a message counts only when its source is that frame's window,
// its origin is opaque ("null"), it carries the protocol tag, is small, and has one of five known
// shapes (started, failed, log, handle, result for a call this page asked); anything else is
// refused and counted on the frame (`data-cordis-refused`). What a frame may do in the page is
// exactly that: draw inside its own frame, log a line, register a handler, answer a call. The list
// is fetched when the section first renders, on `cordis/request-run` and after a reconnect; a
// `cordis/retracted` event removes the frame at once.
import type { Context } from 'cordis'
import { useCallback } from 'react'
import { installStyles, type SessionSlotProps, Store, useStore, useT } from '@dsh/client-runtime'
import {
  type BrowserHalf,
  cordisBrowserHalves,
  cordisBrowserReport,
  FRAME_PROTOCOL,
  INVOKE,
  MAX_HANDLER_CHARS,
  MAX_MESSAGE_CHARS,
  MAX_MESSAGES_PER_FRAME,
  MAX_TEXT_CHARS,
  REQUEST_RUN,
  RETRACTED,
  type ReportParams,
} from '../contract.ts'

export const NAMESPACE = 'cordisFrames'
export const name = '@dsh/cordis-client-runner'
export const inject = ['slots', 'locale', 'remote', 'connection']

const en = {
  title: 'Plugin views',
  frame: 'Browser half of the model-written plugin {name}',
}
const zh: Record<keyof typeof en, string> = {
  title: '插件视图',
  frame: '模型编写的插件 {name} 的浏览器部分',
}

const CSS = `
.dsh-cordis-frames figure { margin: 6px 0; border: 1px solid var(--border, #ddd); border-radius: 6px; overflow: hidden; }
.dsh-cordis-frames figcaption { font-size: 12px; padding: 2px 6px; background: var(--bg-muted, #f6f6f6); color: var(--fg-muted, #666); }
.dsh-cordis-frames iframe { display: block; width: 100%; height: 180px; border: 0; background: #fff; }
`

/** One mounted frame: which definition it runs, and what it has been asked. */
interface FrameEntry {
  sessionId: string
  half: BrowserHalf
  iframe: HTMLIFrameElement
  figure: HTMLElement
  messages: number
  refused: number
  /** Call ids this page forwarded to the frame and that are not answered yet. */
  pending: Set<number>
}

type Listed = { halves: BrowserHalf[] }

const isPlain = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v) && Object.getPrototypeOf(v) === Object.prototype

/** The report a frame's message asks for, or a reason to refuse it. */
export function checkMessage(
  data: unknown,
  pending: ReadonlySet<number>,
): { report: Omit<ReportParams, 'sessionId' | 'name' | 'hash'> } | { refuse: string } {
  if (!isPlain(data) || data.protocol !== FRAME_PROTOCOL) return { refuse: 'not a frame message' }
  let size: number
  try {
    size = JSON.stringify(data).length
  } catch {
    return { refuse: 'not JSON' }
  }
  if (size > MAX_MESSAGE_CHARS) return { refuse: `larger than ${MAX_MESSAGE_CHARS} characters` }
  const text = (v: unknown) => typeof v === 'string' && v.length <= MAX_TEXT_CHARS
  switch (data.kind) {
    case 'started':
      return { report: { kind: 'started' } }
    case 'failed':
      return text(data.error) ? { report: { kind: 'failed', error: data.error as string } } : { refuse: 'bad failed' }
    case 'log':
      return text(data.text) ? { report: { kind: 'log', text: data.text as string } } : { refuse: 'bad log' }
    case 'handle':
      return typeof data.handler === 'string' && data.handler.length > 0 && data.handler.length <= MAX_HANDLER_CHARS
        ? { report: { kind: 'handle', handler: data.handler } }
        : { refuse: 'bad handle' }
    case 'result': {
      if (typeof data.id !== 'number' || !pending.has(data.id)) return { refuse: 'an answer to no call' }
      if (data.error !== undefined)
        return text(data.error)
          ? { report: { kind: 'result', id: data.id, error: data.error as string } }
          : { refuse: 'bad result' }
      return { report: { kind: 'result', id: data.id, value: data.value ?? null } }
    }
    default:
      return { refuse: 'unknown kind' }
  }
}

export function apply(ctx: Context): void {
  ctx.locale.register(NAMESPACE, { en, zh })
  installStyles(ctx, name, CSS, 'cordis-client-runner: stylesheet')

  const frames = new Set<FrameEntry>()
  const bySession = new Map<string, Store<Listed>>()
  const refresh = async (sessionId: string) => {
    const store = bySession.get(sessionId)
    if (!store) return
    try {
      const { halves } = await ctx.remote.call(cordisBrowserHalves, { sessionId })
      store.set({ halves })
    } catch {
      // the next event or reconnect asks again
    }
  }
  const storeOf = (sessionId: string) => {
    let store = bySession.get(sessionId)
    if (!store) {
      bySession.set(sessionId, (store = new Store<Listed>({ halves: [] })))
      void refresh(sessionId)
    }
    return store
  }
  const report = (entry: FrameEntry, params: Omit<ReportParams, 'sessionId' | 'name' | 'hash'>) => {
    // The frame names nothing: the definition is the one this page framed.
    ctx.remote
      .call(cordisBrowserReport, {
        sessionId: entry.sessionId,
        name: entry.half.name,
        hash: entry.half.hash,
        ...params,
      })
      .catch(() => {})
  }
  const refuse = (entry: FrameEntry) => {
    entry.refused += 1
    entry.figure.dataset.cordisRefused = String(entry.refused)
  }

  ctx.effect(() => {
    if (typeof window === 'undefined') return () => {}
    const onMessage = (event: MessageEvent) => {
      let entry: FrameEntry | undefined
      for (const e of frames) if (event.source !== null && e.iframe.contentWindow === event.source) entry = e
      if (!entry) return // not one of our frames: none of our business
      // A sandboxed frame without allow-same-origin has the opaque origin; anything else is not the document we served.
      if (event.origin !== 'null' || ++entry.messages > MAX_MESSAGES_PER_FRAME) return refuse(entry)
      const checked = checkMessage(event.data, entry.pending)
      if ('refuse' in checked) return refuse(entry)
      const r = checked.report
      if (r.kind === 'result') entry.pending.delete(r.id!)
      if (r.kind === 'started' || r.kind === 'failed') entry.figure.dataset.cordisFrameState = r.kind
      report(entry, r)
    }
    window.addEventListener('message', onMessage)
    return () => window.removeEventListener('message', onMessage)
  }, 'cordis-client-runner: frame messages')

  ctx.effect(
    () =>
      ctx.connection.onHost((hostEvent) => {
        // Our events are plain records; their fields are checked before use.
        const event = hostEvent as { type: string; [key: string]: unknown }
        const sessionId = typeof event.sessionId === 'string' ? event.sessionId : undefined
        if (event.type === 'connection/reset') for (const id of bySession.keys()) void refresh(id)
        else if (event.type === REQUEST_RUN && sessionId) void refresh(sessionId)
        else if (event.type === RETRACTED && sessionId) {
          // A clean page at once: the frame (and the realm of its code) goes with the list entry.
          const store = bySession.get(sessionId)
          if (store) store.set({ halves: store.get().halves.filter((h) => h.name !== event.name) })
          void refresh(sessionId)
        } else if (event.type === INVOKE && sessionId) {
          for (const entry of frames) {
            if (entry.sessionId !== sessionId || entry.half.name !== event.name || entry.half.hash !== event.hash)
              continue
            if (typeof event.id !== 'number' || typeof event.handler !== 'string') return
            const id = event.id
            entry.pending.add(id)
            entry.iframe.contentWindow?.postMessage(
              { protocol: FRAME_PROTOCOL, kind: 'invoke', id, handler: event.handler, input: event.input },
              '*',
            )
            break
          }
        }
      }),
    'cordis-client-runner: host events',
  )

  function Frame({ half, sessionId }: { half: BrowserHalf; sessionId: string }) {
    const t = useT(NAMESPACE)
    // Registered while the element is in the page; a removed frame's window is gone with it.
    const attach = useCallback(
      (figure: HTMLElement | null) => {
        if (!figure) return
        const iframe = figure.querySelector('iframe')!
        const entry: FrameEntry = { sessionId, half, iframe, figure, messages: 0, refused: 0, pending: new Set() }
        frames.add(entry)
        return () => void frames.delete(entry)
      },
      [half, sessionId],
    )
    return (
      <figure ref={attach} data-cordis-frame={half.name}>
        <figcaption>{half.name}</figcaption>
        <iframe
          title={t('frame', { name: half.name })}
          src={half.url}
          sandbox="allow-scripts"
          referrerPolicy="no-referrer"
        />
      </figure>
    )
  }

  function Section({ sessionId }: SessionSlotProps) {
    const t = useT(NAMESPACE)
    const { halves } = useStore(storeOf(sessionId))
    if (halves.length === 0) return null
    return (
      <section className="dsh-cordis-frames" aria-label={t('title')} data-cordis-frames="true">
        <h3>{t('title')}</h3>
        {halves.map((h) => (
          <Frame key={`${h.name}:${h.hash}`} half={h} sessionId={sessionId} />
        ))}
      </section>
    )
  }

  ctx.slots.register('panel.side', { id: 'cordis-client-runner', order: 31, component: Section })
}

export default { name, inject, apply }
