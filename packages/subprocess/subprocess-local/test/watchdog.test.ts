// The provider's side of the watchdog: every pipe group and terminal session it starts is guarded
// from its spawn until its exit record, whichever spawner started it; `watchdog: false` guards
// nothing. (What the watchdog does when the harness dies: watchdog.e2e.test.ts and
// @dsh/posix-spawn's test/watchdog.test.ts.)
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Context } from 'cordis'
import { afterAll, describe, expect, it } from 'vitest'
import { watchdogStatus, watchdogUnavailable } from '@dsh/posix-spawn'
import type { SubprocessService } from '@dsh/subprocess'
import LocalSubprocessService from '../src/index.ts'

const dir = mkdtempSync(join(tmpdir(), 'dsh-subprocess-watchdog-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

async function mount(
  config: object,
): Promise<{ ctx: Context; service: SubprocessService & { watchdog: boolean; watchdogFallback?: string } }> {
  const ctx = new Context()
  await ctx.plugin(LocalSubprocessService, { scrub: { deny: [], allow: [] }, ...config } as never)
  return { ctx, service: ctx.get('subprocess') as never }
}

describe.runIf(process.platform === 'linux' && watchdogUnavailable() === undefined)(
  'subprocess-local guards what it starts',
  () => {
    for (const spawner of ['auto', 'child_process'] as const) {
      it(`guards a pipe process group until its exit record (spawner: ${spawner})`, async () => {
        const { ctx, service } = await mount({ spawner })
        expect(service.watchdog).toBe(true)
        const before = watchdogStatus().guarded
        const handle = service.spawn({ file: 'sleep', args: ['600'], cwd: dir, kill: { graceMs: 100 } })
        expect(watchdogStatus().guarded).toBe(before + 1)
        const watchdog = watchdogStatus().pid
        expect(watchdog).toBeGreaterThan(1)
        expect(watchdog).not.toBe(handle.pid)
        await handle.terminate()
        expect(watchdogStatus().guarded).toBe(before)
        await ctx.registry.delete(LocalSubprocessService as never)
      })
    }

    it('guards a terminal session until its exit record', async () => {
      const { ctx, service } = await mount({})
      const before = watchdogStatus().guarded
      const term = service.spawnTerminal({
        file: 'sh',
        args: ['-c', 'read line'],
        cwd: dir,
        cols: 80,
        rows: 24,
        kill: { graceMs: 100 },
      })
      expect(watchdogStatus().guarded).toBe(before + 1)
      term.write('done\n')
      await term.exited
      expect(watchdogStatus().guarded).toBe(before)
      await ctx.registry.delete(LocalSubprocessService as never)
    })

    it('guards nothing with watchdog: false', async () => {
      const { ctx, service } = await mount({ watchdog: false })
      expect(service.watchdog).toBe(false)
      expect(service.watchdogFallback).toBe('configured')
      const before = watchdogStatus().guarded
      const handle = service.spawn({ file: 'sleep', args: ['600'], cwd: dir, kill: { graceMs: 100 } })
      expect(handle.pid).toBeGreaterThan(1)
      expect(watchdogStatus().guarded).toBe(before)
      await handle.terminate()
      await ctx.registry.delete(LocalSubprocessService as never)
    })
  },
)
