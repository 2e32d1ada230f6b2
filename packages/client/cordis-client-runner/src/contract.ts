// The browser-run round trip of model-written plugins (browser-safe: no node imports): the host
// methods the page calls, the host stream events it listens to, and the message set spoken between
// the page and a plugin's sandboxed frame.
import Schema from 'schemastery'
import { defineMethod } from '@dsh/web-protocol'

/** The route that serves a running browser half's document: `/cordis-frame/<sessionId>/<name>/<hash>`. */
export const FRAME_PREFIX = '/cordis-frame'

export function frameUrl(sessionId: string, name: string, hash: string): string {
  return `${FRAME_PREFIX}/${encodeURIComponent(sessionId)}/${encodeURIComponent(name)}/${hash}`
}

/** A browser half a page should run: a running definition of the session that has one. */
export interface BrowserHalf {
  name: string
  hash: string
  /** The frame document (same origin, served sandboxed). */
  url: string
  state: 'waiting' | 'running' | 'failed'
}

/** Host stream: a definition with a browser half started on the host; pages of the session run it. */
export const REQUEST_RUN = 'cordis/request-run'
/** Host stream: a definition was taken down; pages remove its frame. */
export const RETRACTED = 'cordis/retracted'
/** Host stream: call a handler the browser half registered; a page running it reports the result. */
export const INVOKE = 'cordis/invoke'

/** Frame <-> page messages carry this protocol tag. */
export const FRAME_PROTOCOL = 'dsh-cordis-frame/1'
/** Longest message (as JSON) a frame may send; longer ones are refused. */
export const MAX_MESSAGE_CHARS = 16_384
/** Messages one frame may send in its life; later ones are refused. */
export const MAX_MESSAGES_PER_FRAME = 500
export const MAX_TEXT_CHARS = 4000
export const MAX_HANDLER_CHARS = 100

export type ReportKind = 'started' | 'failed' | 'log' | 'handle' | 'result'

export interface ReportParams {
  sessionId: string
  name: string
  hash: string
  kind: ReportKind
  text?: string
  error?: string
  handler?: string
  id?: number
  value?: unknown
}

export const cordisBrowserHalves = defineMethod('cordis.browserHalves', {
  description: "The running browser halves of the session's model-written plugins: what its pages should run.",
  params: Schema.object({ sessionId: Schema.string().min(1).required() }) as Schema<{ sessionId: string }>,
  result: Schema.object({ halves: Schema.array(Schema.any()).required() }) as unknown as Schema<{
    halves: BrowserHalf[]
  }>,
})

export const cordisBrowserReport = defineMethod('cordis.browserReport', {
  description:
    'A page reports on the browser half it runs in a sandboxed frame: started, failed, a logged line, a handler, or a call result.',
  params: Schema.object({
    sessionId: Schema.string().min(1).required(),
    name: Schema.string().min(1).max(40).required(),
    hash: Schema.string()
      .pattern(/^[0-9a-f]{64}$/)
      .required(),
    kind: Schema.union(['started', 'failed', 'log', 'handle', 'result'] as const).required(),
    text: Schema.string().max(MAX_TEXT_CHARS),
    error: Schema.string().max(MAX_TEXT_CHARS),
    handler: Schema.string().min(1).max(MAX_HANDLER_CHARS),
    id: Schema.natural(),
    value: Schema.any(),
  }) as unknown as Schema<ReportParams>,
  result: Schema.object({}),
})
