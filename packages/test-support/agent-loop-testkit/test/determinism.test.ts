import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import type { Context } from 'cordis'
import * as LlmReplay from '@dsh/llm-replay'
import { checkRequestReconstructable } from '@dsh/invariants'
import { createHarness } from '../src/index.ts'

const echoTool = {
  name: 'echo-tool',
  inject: ['tools'],
  apply(ctx: Context) {
    ctx.tools.register({
      name: 'echo',
      description: 'echoes its value',
      parameters: { type: 'object', properties: { value: { type: 'string' } }, required: ['value'] },
      concurrencySafe: true,
      execute: (args: { value: string }) => ({ content: `echo: ${args.value}` }),
    })
  },
}

const strip = (events: readonly { type: string; seq: number; data: unknown }[]) =>
  events.map(({ type, seq, data }) => ({ type, seq, data }))

describe('determinism', () => {
  it('replaying a recorded session through @dsh/llm-replay reproduces the identical log', async () => {
    const recording = await createHarness({
      plugins: [[echoTool]],
      script: [
        {
          reasoning: 'I should echo twice',
          toolCalls: [
            { name: 'echo', arguments: { value: 'a' } },
            { name: 'echo', arguments: { value: 'b' } },
          ],
        },
        { toolCalls: [{ name: 'echo', arguments: '{"value": 1' }] }, // malformed: an error result
        { text: 'all done' },
        { text: 'second turn answer' },
      ],
    })
    await recording.prompt('echo a and b')
    await recording.prompt('and again')
    const dir = mkdtempSync(join(tmpdir(), 'dsh-replay-'))
    const file = join(dir, 'session.jsonl')
    writeFileSync(file, recording.session.events.map((e) => JSON.stringify(e)).join('\n') + '\n')
    const recorded = strip(recording.session.events)
    await recording.dispose()

    const replay = await createHarness({ plugins: [[echoTool], [LlmReplay, { file }]] })
    await replay.prompt('echo a and b')
    await replay.prompt('and again')
    expect(strip(replay.session.events)).toEqual(recorded)
    expect(replay.model.requests).toHaveLength(0) // every request was answered by the replay
    await replay.dispose()
  })

  it('every request is reconstructable from the log (model-visible means logged)', async () => {
    const harness = await createHarness({
      plugins: [[echoTool]],
      script: [{ toolCalls: [{ name: 'echo', arguments: { value: 'x' } }] }, { text: 'ok' }, { text: 'two' }],
    })
    const checks: string[][] = []
    await harness.mount({
      name: 'request-checker',
      apply(ctx: Context) {
        ctx.on('agent/request', async (payload, next) => {
          const violations = checkRequestReconstructable(
            payload.agent.session,
            payload.request,
            payload.agent.session.length,
          )
          checks.push(violations.map((v) => v.message))
          return next()
        })
      },
    })
    await harness.prompt('one')
    harness.agent.inject({ content: 'context note', source: { kind: 'plugin', plugin: 'test' } })
    await harness.prompt('two')
    expect(checks).toHaveLength(3)
    expect(checks.flat()).toEqual([])
    await harness.dispose()
  })
})
