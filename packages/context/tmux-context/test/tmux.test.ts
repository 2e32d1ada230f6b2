// Against a real tmux server on a private socket: the agent runs inside a pane (or, for the
// inherited-environment case, in this test process with a pane's variables copied in).
import { execFileSync } from 'node:child_process'
import { mkdirSync, symlinkSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createHarness } from '@dsh/agent-loop-testkit'
import LocalSubprocessService from '@dsh/subprocess-local'
import BashLocalExecutor from '@dsh/bash-local'
import * as TmuxContext from '../src/index.ts'
import { TmuxServer, injections, type PaneAgent } from './tmux-server.ts'

let server: TmuxServer
const started: PaneAgent[] = []

beforeAll(() => {
  server = new TmuxServer()
})
afterAll(async () => {
  await Promise.all(started.map((a) => a.exit()))
  server?.kill()
})

async function agentIn(name: string, config: { tmux?: object; bash?: object } = {}) {
  const agent = await server.startAgent(name, config)
  started.push(agent)
  return agent
}

describe('tmux-context in a real tmux pane', () => {
  it('injects the reading on turn 1, nothing when unchanged, again after a rename, and not again after resume', async () => {
    const agent = await agentIn('alpha')
    const windowIndex = server.tmux('display-message', '-t', agent.windowId, '-p', '#{window_index}')
    const layout = server.tmux('display-message', '-t', agent.windowId, '-p', '#{window_layout}')

    const first = await agent.call('/prompt', { text: 'where am I?' })
    expect(injections(first.events)).toEqual([
      `tmux location (turn 1):\nsession main, window ${windowIndex} "alpha", pane 0 ${agent.paneId}\nwindow active=0, pane active=1, layout ${layout}`,
    ])
    // The model saw it, before the human message of the same turn.
    const seen = JSON.stringify(first.requests[0])
    expect(seen).toContain('tmux location (turn 1):')
    expect(seen.indexOf('tmux location')).toBeLessThan(seen.indexOf('where am I?'))

    const second = await agent.call('/prompt', { text: 'again' })
    expect(injections(second.events)).toHaveLength(1)

    server.tmux('rename-window', '-t', agent.windowId, 'beta')
    const third = await agent.call('/prompt', { text: 'renamed' })
    const all = injections(third.events)
    expect(all).toHaveLength(2)
    expect(all[1]).toMatch(/^tmux location \(turn 3\):\nsession main, window \d+ "beta", pane 0 %\d+\n/)

    // A new agent over the restored log (what a resumed process sees) schedules from the log.
    await agent.call('/resume')
    const resumed = await agent.call('/prompt', { text: 'after resume' })
    expect(injections(resumed.events)).toHaveLength(2)
    expect(resumed.events.filter((e) => e.type === 'turn/start')).toHaveLength(4)
  })

  it('refreshIntervalMs suppresses a changed reading inside the window', async () => {
    const agent = await agentIn('gamma', { tmux: { refreshIntervalMs: 3_600_000 } })
    const first = await agent.call('/prompt')
    expect(injections(first.events)).toHaveLength(1)
    expect(injections(first.events)[0]).toContain('"gamma"')
    server.tmux('rename-window', '-t', agent.windowId, 'delta')
    const second = await agent.call('/prompt')
    expect(injections(second.events)).toHaveLength(1)
  })

  it('gives nothing and no error when tmux is not on PATH', async () => {
    // A PATH with ps and tr but no tmux.
    const bin = join(server.dir, 'bin-without-tmux')
    mkdirSync(bin, { recursive: true })
    for (const tool of ['ps', 'tr'])
      symlinkSync(execFileSync('which', [tool], { encoding: 'utf8' }).trim(), join(bin, tool))
    const agent = await agentIn('epsilon', { bash: { bash: '/bin/bash', environment: { PATH: bin } } })
    const state = await agent.call('/prompt')
    expect(injections(state.events)).toEqual([])
    expect(state.events.find((e) => e.type === 'turn/end')?.data).toMatchObject({ reason: 'completed' })
  })
})

describe('tmux-context with an inherited TMUX_PANE', () => {
  it('reads as not in tmux: the pane exists but does not own this process tty', async () => {
    const agent = await agentIn('owner')
    const socketPath = server.tmux('display-message', '-p', '#{socket_path}')
    const saved = { TMUX: process.env.TMUX, TMUX_PANE: process.env.TMUX_PANE }
    process.env.TMUX = `${socketPath},1,0`
    process.env.TMUX_PANE = agent.paneId
    try {
      // tmux itself answers with this environment, so only the tty comparison rejects it.
      expect(
        execFileSync('tmux', ['display-message', '-t', agent.paneId, '-p', '#{pane_id}'], { encoding: 'utf8' }).trim(),
      ).toBe(agent.paneId)
      const logs: string[] = []
      const harness = await createHarness({
        script: [{ text: 'ok' }],
        plugins: [
          [LocalSubprocessService, {}],
          [BashLocalExecutor, {}],
          [TmuxContext, {}],
        ],
      })
      harness.ctx.logger.exporter({
        levels: { default: 3 },
        export: (m) => void logs.push(String((m as { content?: unknown }).content ?? m)),
      })
      const result = await harness.prompt('hi')
      expect(result.reason).toBe('completed')
      expect(injections([...harness.session.events])).toEqual([])
      expect(logs.filter((l) => /tmux/.test(l))).toEqual([])
      await harness.dispose()
    } finally {
      for (const [k, v] of Object.entries(saved)) {
        if (v === undefined) delete process.env[k]
        else process.env[k] = v
      }
    }
  })
})
