// The skill catalog method of the web host (browser-safe: no node imports).
import Schema from 'schemastery'
import { defineMethod } from '@dsh/web-protocol'

/** One skill as the `/` menu shows it. */
export interface WireSkill {
  name: string
  description: string
  /** False for a skill only the user can invoke (`disable-model-invocation: true`). */
  modelInvocable: boolean
}

export const skillList = defineMethod('skill.list', {
  description: "The skills a session's user can invoke as /<name>: those visible from its working directory.",
  params: Schema.object({ sessionId: Schema.string().min(1).required() }),
  result: Schema.object({
    skills: Schema.array(
      Schema.object({
        name: Schema.string().required(),
        description: Schema.string().required(),
        modelInvocable: Schema.boolean().required(),
      }),
    ).required(),
  }) as Schema<{ skills: WireSkill[] }>,
})
