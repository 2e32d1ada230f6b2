import { expect, it } from 'vitest'
import { Context } from 'cordis'
import ToolRegistry from '@dsh/tools'
import LocalSubprocessService from '@dsh/subprocess-local'
import BashLocalExecutor from '@dsh/bash-local'
import ShellEnvRegistry from '@dsh/shell-env'
import * as ToolBash from '../src/index.ts'

it('composes from rows without config, in any order, waiting for its services', async () => {
  const ctx = new Context()
  ctx.plugin(ToolBash)
  ctx.plugin(BashLocalExecutor)
  await new Promise((resolve) => setTimeout(resolve, 30))
  expect(ctx.get('shell')).toBeUndefined()
  await ctx.plugin(ShellEnvRegistry)
  await ctx.plugin(LocalSubprocessService)
  await ctx.plugin(ToolRegistry)
  await new Promise((resolve) => setTimeout(resolve, 30))
  expect(ctx.shell.limits).toEqual({ defaultTimeoutMs: 120_000, maxTimeoutMs: 600_000 })
  expect(ctx.tools.get('bash')?.timeoutMs).toBe(630_000)
  const result = await ctx.tools.execute({ callId: 'c', name: 'bash', arguments: '{"command":"echo $DSH_SHELL","description":"x"}' }, { cwd: process.cwd() })
  expect(result.message.content).toEqual([{ type: 'text', text: '1\n[exit code: 0]' }])
})
