// The dynamic-plugin methods of the web host (browser-safe: no node imports).
import Schema from 'schemastery'
import { defineMethod } from '@dsh/web-protocol'

/** A definition the host runner holds, as the panel shows it. */
export interface WireDefinition {
  name: string
  description: string
  code: string
  /** The browser half's code, when the definition has one. */
  browser?: string
  hash: string
  sessionId?: string
  state: 'defined' | 'running' | 'failed'
  error?: string
  handlers: string[]
  log: string[]
  /** With a browser half, while running: whether a page runs it. */
  browserState?: 'waiting' | 'running' | 'failed'
  browserError?: string
  browserHandlers?: string[]
}

/** Host stream event: a definition was defined, started or retracted. */
export const CORDIS_CHANGED = 'cordis/changed'

/** A definition is named within its session: the caller says which session's it means. */
const Name = Schema.object({
  sessionId: Schema.string().min(1).required(),
  name: Schema.string().min(1).required(),
})
const One = Schema.object({ definition: Schema.any() }) as unknown as Schema<{ definition: WireDefinition }>

export const cordisDefinitions = defineMethod('cordis.definitions', {
  description:
    "The model-written plugins the host runner holds: those `sessionId` defined, or every session's without it.",
  params: Schema.object({ sessionId: Schema.string().min(1) }) as Schema<{ sessionId?: string }>,
  result: Schema.object({ definitions: Schema.array(Schema.any()).required() }) as unknown as Schema<{
    definitions: WireDefinition[]
  }>,
})
export const cordisRun = defineMethod('cordis.run', {
  description:
    "Starts the definition `name` of session `sessionId`; the approval is asked in that session. Another session's definition is UNKNOWN_DEFINITION.",
  params: Name as Schema<{ sessionId: string; name: string }>,
  result: One,
})
export const cordisRetract = defineMethod('cordis.retract', {
  description:
    "Takes the definition `name` of session `sessionId` down (if running) and forgets it. Another session's definition is UNKNOWN_DEFINITION.",
  params: Name as Schema<{ sessionId: string; name: string }>,
  result: Schema.object({}),
})
