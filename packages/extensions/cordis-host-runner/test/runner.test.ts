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
    expect(await runner.invoke('watcher', 'ping', null, h.session.id)).toBe('pong')
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

  it('keys definitions by session: one session cannot run, call, retract or replace another’s plugin', async () => {
    const { h, runner } = await setup('allowed-once')
    const mine = h.session.id
    runner.define({
      name: 'tool',
      description: 'mine',
      code: "dsh.handle('who', () => 'mine')",
      sessionId: mine,
      cwd: '/',
    })
    // The same name in another session is a separate definition, not a replacement.
    runner.define({
      name: 'tool',
      description: 'theirs',
      code: "dsh.handle('who', () => 'theirs')",
      sessionId: 'other',
      cwd: '/',
    })
    expect(runner.get('tool', mine)?.description).toBe('mine')
    expect(runner.list('other').map((d) => d.description)).toEqual(['theirs'])
    await runner.run('tool', { sessionId: mine })
    expect(await runner.invoke('tool', 'who', null, mine)).toBe('mine')
    // From a third session the name does not exist.
    expect(code(await failed(runner.run('tool', { sessionId: 'third' })))).toBe('UNKNOWN_DEFINITION')
    expect(code(await failed(runner.invoke('tool', 'who', null, 'third')))).toBe('UNKNOWN_DEFINITION')
    expect(code(await failed(runner.retract('tool', 'x', 'third')))).toBe('UNKNOWN_DEFINITION')
    expect(code(await failed(runner.invoke('tool', 'who', null, 'other')))).toBe('NOT_RUNNING')
    await runner.retract('tool', 'done', 'other')
    expect(runner.get('tool', mine)?.state).toBe('running')
    await h.dispose()
  })

  it('a browser half: approved with the host half, asked of the pages, reported on and called through them', async () => {
    const { h, runner } = await setup('allowed-once', { settleTimeoutMs: 5000 })
    const sid = h.session.id
    expect(
      (
        await failed(
          Promise.resolve().then(() =>
            runner.define({
              name: 'bad',
              description: '',
              code: '',
              browser: "x = '</script>'",
              sessionId: sid,
              cwd: '/',
            }),
          ),
        )
      ).message,
    ).toMatch(/must not contain "<\/script"/)
    expect(
      code(
        await failed(
          Promise.resolve().then(() =>
            runner.define({ name: 'none', description: '', code: ' ', sessionId: sid, cwd: '/' }),
          ),
        ),
      ),
    ).toBe('INVALID_CODE')
    const details: string[] = []
    // Consulted first (newest), it only records what the user is shown and leaves the answer to the test's.
    h.ctx.approval.registerAnswerer({
      name: 'recorder',
      accepts: (request) => {
        details.push(String(request.detail))
        return false
      },
      answer: () => ({ decision: 'rejected' }),
    })
    const d = runner.define({
      name: 'view',
      description: 'draws',
      code: '',
      browser: "dsh.log('hi')",
      sessionId: sid,
      cwd: '/',
    })
    const requested = new Promise<string>((resolve) =>
      h.ctx.on('dynamicCordisRunner/request-run', (x) => resolve(x.name)),
    )
    await runner.run('view', { sessionId: sid })
    expect(await requested).toBe('view')
    expect(details.join('\n')).toContain("dsh.log('hi')")
    expect(d.browserState).toBe('waiting')
    expect(() => runner.browserReport('view', sid, 'f'.repeat(64), { kind: 'started' })).toThrow(/other code/)
    runner.browserReport('view', sid, d.hash, { kind: 'started' })
    runner.browserReport('view', sid, d.hash, { kind: 'log', text: 'hi' })
    runner.browserReport('view', sid, d.hash, { kind: 'handle', handler: 'size' })
    expect(d).toMatchObject({ browserState: 'running', log: ['[browser] hi'], browserHandlers: ['size'] })
    // A page answers the call it was handed.
    h.ctx.on('dynamicCordisRunner/browser-invoke', (_x, call) =>
      queueMicrotask(() =>
        runner.browserReport('view', sid, d.hash, { kind: 'result', id: call.id, value: { w: call.input } }),
      ),
    )
    expect(await runner.invoke('view', 'size', 3, sid)).toEqual({ w: 3 })
    expect(() => runner.browserReport('view', sid, d.hash, { kind: 'result', id: 999, value: 1 })).toThrow(
      /no call 999/,
    )
    await runner.retract('view', 'done', sid)
    expect(() => runner.browserReport('view', sid, d.hash, { kind: 'started' })).toThrow(/no definition/)
    await h.dispose()
  })
})
