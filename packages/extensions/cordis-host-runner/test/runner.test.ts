// ctx.dynamicCordisRunner on a real agent tree (@dsh/agent-loop-testkit: session store, agents,
// loop) with the real approval service: lifecycle with the session, fail-closed approval, the vm
// sandbox's timeouts, and unloading.
import { describe, expect, it } from 'vitest'
import ApprovalService from '@dsh/user-approval'
import { createHarness } from '@dsh/agent-loop-testkit'
import Runner, { type RunnerError } from '../src/index.ts'

async function setup(answer: 'allowed-once' | 'rejected' | null, config: Record<string, unknown> = {}) {
  const h = await createHarness({ script: [] })
  await h.mount(ApprovalService)
  if (answer) h.ctx.approval.registerAnswerer({ name: 'test', answer: () => ({ decision: answer }) })
  // A synchronous slice of 2 s: code that is not meant to time out must not (a loaded machine ran
  // a plain throw past 100 ms); the test of the bound sets its own short one.
  const mounted = await h.mount(Runner, { settleTimeoutMs: 2000, syncTimeoutMs: 2000, ...config })
  return { h, runner: h.ctx.dynamicCordisRunner, mounted }
}

const code = (error: unknown) => (error as RunnerError).code
const failed = (p: Promise<unknown>) =>
  p.then(
    () => new Error('it did not fail'),
    (e: unknown) => e as RunnerError,
  )

describe('DynamicCordisRunner', () => {
  it('retracts a session’s running definitions when its agent goes, running their disposers', async () => {
    const { h, runner } = await setup('allowed-once')
    const d = runner.define({
      name: 'watcher',
      description: 'keeps state',
      code: "dsh.handle('ping', () => 'pong'); dsh.onDispose(() => dsh.log('disposed'))",
      sessionId: h.session.id,
      cwd: process.cwd(),
    })
    await runner.run('watcher', { sessionId: h.session.id })
    expect(await runner.invoke('watcher', 'ping', null)).toBe('pong')
    const retracted = new Promise<string>((resolve) =>
      h.ctx.on('dynamicCordisRunner/retract', (_d, reason) => resolve(reason)),
    )
    await h.agent.dispose()
    expect(await retracted).toBe('session ended')
    expect(d.log).toEqual(['disposed'])
    expect(runner.list()).toEqual([])
    expect(h.session.events.map((e) => e.type)).toEqual(
      expect.arrayContaining(['cordis/define', 'cordis/run', 'cordis/retract']),
    )
    await h.dispose()
  })

  it('fails closed: no answerer means unavailable, and the code does not start', async () => {
    const { h, runner } = await setup(null)
    const d = runner.define({ name: 'x', description: '', code: "dsh.log('started')", cwd: '/' })
    expect(code(await failed(runner.run('x')))).toBe('NOT_APPROVED')
    expect(d.log).toEqual([])
    expect(d.state).toBe('defined')
    await h.dispose()
  })

  it('bounds the code: an endless loop at start or in a handler is stopped, and the process lives on', async () => {
    const { h, runner } = await setup('allowed-once', { syncTimeoutMs: 100 })
    runner.define({ name: 'spin', description: '', code: 'for (;;) {}', cwd: '/' })
    const error = await failed(runner.run('spin'))
    expect(code(error)).toBe('APPLY_FAILED')
    expect(String(error.message)).toMatch(/timed out/i)
    expect(runner.get('spin')?.state).toBe('failed')
    runner.define({ name: 'later', description: '', code: "dsh.handle('spin', () => { for (;;) {} })", cwd: '/' })
    await runner.run('later')
    const spun = await failed(runner.invoke('later', 'spin', null))
    expect(code(spun)).toBe('HANDLER_FAILED')
    expect(String(spun.message)).toMatch(/timed out/i)
    runner.define({ name: 'syntax', description: '', code: 'this is not javascript', cwd: '/' })
    expect((await failed(runner.run('syntax'))).message).toMatch(/does not compile/)
    await h.dispose()
  })

  it('a result that is not JSON and a rejected promise become handler errors', async () => {
    const { h, runner } = await setup('allowed-once')
    runner.define({
      name: 'odd',
      description: '',
      code: "dsh.handle('cyclic', () => { const a = {}; a.a = a; return a }); dsh.handle('boom', async () => { throw new Error('kaput') })",
      cwd: '/',
    })
    await runner.run('odd')
    expect((await failed(runner.invoke('odd', 'cyclic', null))).message).toMatch(/not JSON/)
    expect((await failed(runner.invoke('odd', 'boom', null))).message).toBe('odd.boom failed: kaput')
    await h.dispose()
  })

  it('unloading the runner takes every running definition down', async () => {
    const { h, runner, mounted } = await setup('allowed-once')
    const d = runner.define({ name: 'a', description: '', code: "dsh.onDispose(() => dsh.log('bye'))", cwd: '/' })
    await runner.run('a')
    await mounted.dispose()
    await expect.poll(() => d.log).toEqual(['bye'])
    await h.dispose()
  })
})
