// The slash-command recipe with the real command registry and a real agent loop.
import { afterEach, expect, it } from 'vitest'
import { createHarness, type Harness } from '@dsh/agent-loop-testkit'
import CommandRegistry from '@dsh/commands'
import * as wordCount from '../../tool/index.ts'
import * as toolsUsed from '../index.ts'

let harness: Harness | undefined
afterEach(async () => harness?.dispose())

it('/tools-used counts the tool calls of the session and never reaches the model', async () => {
  harness = await createHarness({
    plugins: [[CommandRegistry, {}], [toolsUsed], [wordCount, {}]],
    script: [
      {
        toolCalls: [
          { name: 'word_count', arguments: { text: 'a b' } },
          { name: 'word_count', arguments: { text: 'c' } },
        ],
      },
      { text: 'done' },
    ],
  })
  const { ctx, agent } = harness
  expect(await ctx.commands.dispatch(agent, '/tools-used')).toMatchObject({
    handled: true,
    ok: true,
    output: 'No tool was called in this session yet.',
  })
  await harness.prompt('count twice')
  const events = harness.session.events.length
  expect(await ctx.commands.dispatch(agent, '/tools-used')).toMatchObject({ ok: true, output: 'word_count: 2' })
  expect(await ctx.commands.dispatch(agent, '/tools-used bash')).toMatchObject({ ok: true, output: 'bash: 0 call(s)' })
  expect(harness.session.events.length).toBe(events)
  expect(harness.model.requests).toHaveLength(2)
  expect(ctx.commands.list().map((c) => c.name)).toContain('tools-used')
})
