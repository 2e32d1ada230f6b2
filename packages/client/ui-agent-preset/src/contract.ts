// The agent-preset methods of the web host (browser-safe: no node imports).
import Schema from 'schemastery'
import { defineMethod } from '@dsh/web-protocol'

export interface WirePreset {
  name: string
  source: 'builtin' | 'home' | 'config'
}

export interface PresetsListResult {
  presets: WirePreset[]
  /** The preset of new sessions. */
  default: string
  /** The session's recorded preset (absent: none yet, it will take the default). */
  current?: string
}

export const presetsList = defineMethod('presets.list', {
  params: Schema.object({ sessionId: Schema.string() }) as unknown as Schema<{ sessionId?: string }>,
  result: Schema.any() as unknown as Schema<PresetsListResult>,
  description: "The agent presets, the default, and a session's recorded preset.",
})

export const presetsSelect = defineMethod('presets.select', {
  params: Schema.object({
    sessionId: Schema.string().min(1).required(),
    name: Schema.string().min(1).required(),
  }) as unknown as Schema<{ sessionId: string; name: string }>,
  result: Schema.object({ preset: Schema.string() }) as unknown as Schema<{ preset: string }>,
  description: 'Chooses the preset of a session that has not recorded one (a new session); a session keeps its preset.',
})
