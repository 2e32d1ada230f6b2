// toolError: the one helper every tool uses for its model-visible error results (issue 36 folded
// fourteen local copies of it). What the model reads and what the log keeps, through the registry.
import { Context } from 'cordis'
import { expect, it } from 'vitest'
import ToolRegistry, { toolError } from '@dsh/tools'

it('a toolError result reaches tool/result as an error with its code, sentence and meta', async () => {
  const ctx = new Context()
  await ctx.plugin(ToolRegistry)
  ctx.tools.register({
    name: 'probe',
    description: 'fails on purpose',
    parameters: { type: 'object', properties: {} },
    execute: () => toolError('NOT_FOUND', 'no such thing; list them first.', { tried: 'x' }),
  })
  const result = await ctx.tools.execute({ callId: 'c1', name: 'probe', arguments: '{}' }, { cwd: '/work' })
  expect(result.error).toEqual({ code: 'NOT_FOUND', message: 'no such thing; list them first.' })
  expect(result.meta).toEqual({ tried: 'x' })
  expect(JSON.stringify(result.message)).toContain('Error [NOT_FOUND]: no such thing; list them first.')
  expect(toolError('BAD', 'bad.')).toEqual({
    content: 'Error [BAD]: bad.',
    isError: true,
    error: { code: 'BAD', message: 'bad.' },
  })
})
