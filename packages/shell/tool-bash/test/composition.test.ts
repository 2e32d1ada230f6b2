import { expect, it } from 'vitest'
import { Context } from 'cordis'
import ToolRegistry from '@dsh/tools'
import LocalSubprocessService from '@dsh/subprocess-local'
import BashLocalExecutor from '@dsh/bash-local'
import ShellEnvRegistry from '@dsh/shell-env'
import * as ToolBash from '../src/index.ts'

it('composes from rows without config, in any order, waiting for its services', async () => {
  const ctx = new Context()
  const tool = ctx.plugin(ToolBash)
  const executor = ctx.plugin(BashLocalExecutor)
  // Positive control: a row with nothing to wait for, added after these two, is active once
  // awaited; an executor that did not wait for its services would have provided `shell` by then.
  await ctx.plugin({ name: 'control', apply() {} })
  expect(ctx.get('shell')).toBeUndefined()
  await ctx.plugin(ShellEnvRegistry)
  await ctx.plugin(LocalSubprocessService)
  await ctx.plugin(ToolRegistry)
  await executor
  await tool
  expect(ctx.shell.limits).toEqual({ defaultTimeoutMs: 120_000, maxTimeoutMs: 600_000 })
  expect(ctx.tools.get('bash')?.timeoutMs).toBe(630_000)
  const result = await ctx.tools.execute(
    { callId: 'c', name: 'bash', arguments: '{"command":"echo $DSH_SHELL","description":"x"}' },
    { cwd: process.cwd() },
  )
  expect(result.message.content).toEqual([{ type: 'text', text: '1\n[exit code: 0]' }])
})
