// @dsh/session: the append-only session log, its surface index and the `ctx.sessions` store.
export * from './types.ts'
export { JsonValueError, freezeJson, firstDifference, type JsonValue } from './json.ts'
export {
  SessionSurface,
  deriveMessagesFromEvents,
  messageOf,
  type SurfaceNode,
  type SurfaceNodeKind,
  type SurfaceReplaceData,
} from './surface.ts'
export { Session, SessionAppendError, newSessionId, type SessionListener, type SessionOptions, type SessionParent } from './session.ts'
export { SessionForkError, SessionStore, type CreateSessionOptions } from './store.ts'
import { SessionStore } from './store.ts'

export const name = '@dsh/session'
export default SessionStore
