// @dsh/client-connection: the browser's link to the host. `ctx.remote` (typed host calls),
// `ctx.connection` (the host stream, the online state and one `SessionFeed` per session), the SSE
// reader and its UTF-8 decoder, and the small observable `Store` they publish through. It imports
// nothing of @dsh/client-runtime; the runtime starts these services in its root context and
// re-exports every name here, so the page's halves keep importing `@dsh/client-runtime`.
import type { Remote } from './remote.ts'

export { Store, frameBatcher, type ReadableStore } from './store.ts'
export { Remote, RemoteError, type RemoteMethods, type InputOf, type CallOptions, type RemoteConfig } from './remote.ts'
export {
  Connection,
  SessionFeed,
  DELTA_PUBLISH_MS,
  type OnlineState,
  type SessionFeedState,
  type PendingApproval,
  type PendingQuestion,
  type ConnectionConfig,
} from './connection.ts'
export { readSse, StreamError, type SseFrame } from './sse.ts'
export { Utf8Decoder } from './utf8.ts'

declare module 'cordis' {
  interface Context {
    remote: Remote
  }
}
