// The dynamic-plugin methods of the web host (browser-safe: no node imports).
import Schema from 'schemastery'
import { defineMethod } from '@dsh/web-protocol'

/** A definition the host runner holds, as the panel shows it. */
export interface WireDefinition {
  name: string
  description: string
  code: string
  hash: string
  sessionId?: string
  state: 'defined' | 'running' | 'failed'
  error?: string
  handlers: string[]
  log: string[]
}

/** Host stream event: a definition was defined, started or retracted. */
export const CORDIS_CHANGED = 'cordis/changed'

const Name = Schema.object({ name: Schema.string().min(1).required() })
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
  description: 'Starts a definition; the approval is asked in the session that defined it.',
  params: Name as Schema<{ name: string }>,
  result: One,
})
export const cordisRetract = defineMethod('cordis.retract', {
  description: 'Takes a definition down (if running) and forgets it.',
  params: Name as Schema<{ name: string }>,
  result: Schema.object({}),
})
