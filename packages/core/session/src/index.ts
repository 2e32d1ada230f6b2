// @dsh/session: the append-only session log, its surface index and the `ctx.sessions` store.
export * from './types.ts'
export { describeTurnEnd } from './turn-end.ts'
export { JsonValueError, freezeJson, firstDifference, type JsonValue } from './json.ts'
export {
  DEFAULT_MAX_TOOL_ARGUMENT_CHARS,
  OMITTED_ARGUMENTS_KEY,
  SessionSurface,
  boundToolArguments,
  deriveMessagesFromEvents,
  messageOf,
  omittedArguments,
  type SurfaceNode,
  type SurfaceNodeKind,
  type SurfaceReplaceData,
} from './surface.ts'
export {
  RELEASED_CHUNK,
  Session,
  SessionAppendError,
  isReleasedChunk,
  newSessionId,
  type SessionListener,
  type SessionOptions,
  type SessionParent,
  type SubscribeOptions,
} from './session.ts'
export { RELEASE_BLOCK_EVENTS, isReleasedEvent } from './released.ts'
export { CallIdentities } from './call-identity.ts'
export { PLUGIN_ERROR, PluginError, emitNamed, serialNamed } from './plugin-error.ts'
export { SessionForkError, SessionStore, type CreateSessionOptions } from './store.ts'
import { SessionStore } from './store.ts'

export const name = '@dsh/session'
export default SessionStore
