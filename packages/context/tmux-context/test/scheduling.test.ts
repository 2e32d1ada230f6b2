// Scheduling, containment and parsing, with an in-process `ctx.shell` provider whose answer the
// test controls (the real-tmux behaviour is in tmux.test.ts).
import { describe, expect, it } from 'vitest'
import type { Context } from 'cordis'
import { createHarness } from '@dsh/agent-loop-testkit'
import { Session } from '@dsh/session'
import { ShellError, ShellExecutor, type ShellRequest, type ShellResult, type ShellSpec } from '@dsh/shell'
import * as TmuxContext from '../src/index.ts'
import { controllingTty, parseReading, probeCommand, TMUX_FORMAT } from '../src/index.ts'
import { injections } from './tmux-server.ts'

const line = (name: string, layout = 'b25d,160x47,0,0,1') =>
  ['main', '2', name, '0', '%7', '1', '1', layout].join('\t') + '\n'

/** A provider answering every command with `state.output`, or refusing when `state.refuse` is set. */
function cannedShell(state: { output: string; exitCode?: number; refuse?: 'resolve' | 'run'; commands: string[] }) {
  return class Canned extends ShellExecutor {
    readonly dialect = 'bash'
    readonly limits = { defaultTimeoutMs: 1000, maxTimeoutMs: 1000 }
    constructor(ctx: Context) {
      super(ctx)
    }
    async resolve(request: ShellRequest): Promise<ShellSpec> {
      if (state.refuse === 'resolve') throw new ShellError('INVALID_REQUEST', 'policy: no commands here')
      state.commands.push(request.command)
      return {
        executor: 'canned',
        dialect: 'bash',
        command: request.command,
        cwd: request.cwd,
        timeoutMs: 1000,
        output: request.output!,
        env: {},
        notes: [],
      }
    }
    async run(): Promise<ShellResult> {
      if (state.refuse === 'run') throw new Error('sandbox is down')
      const out = state.output
      return {
        status: 'exited',
        exitCode: state.exitCode ?? 0,
        signal: null,
        output: { head: out, tail: '', totalBytes: out.length, truncated: false, omittedBytes: 0 },
        durationMs: 1,
      }
    }
  }
}

async function setup(state: Parameters<typeof cannedShell>[0], config: object = {}, session?: Session) {
  const harness = await createHarness({
    script: Array.from({ length: 20 }, () => ({ text: 'ok' })),
    session,
    plugins: [[cannedShell(state)], [TmuxContext, config]],
  })
  const logs: string[] = []
  harness.ctx.logger.exporter({ levels: { default: 3 }, export: (m) => void logs.push(JSON.stringify(m)) })
  return { harness, logs }
}

describe('parseReading', () => {
  it('accepts one well-formed line', () => {
    expect(parseReading(line('editor'))).toEqual({
      session: 'main',
      windowIndex: 2,
      windowName: 'editor',
      paneIndex: 0,
      paneId: '%7',
      windowActive: true,
      paneActive: true,
      layout: 'b25d,160x47,0,0,1',
    })
  })
  it('rejects malformed readings', () => {
    for (const bad of [
      '',
      'garbage\n',
      line('a\tb'),
      line('x').replace('%7', '7'),
      line('x').replace('\t1\t1\t', '\tyes\t1\t'),
      line('x') + line('y'),
      line('x', ''),
    ]) {
      expect(parseReading(bad)).toBeUndefined()
    }
  })
  it('builds a probe that checks the pane tty against the given pid', () => {
    const command = probeCommand(4242)
    expect(command).toContain('ps -o tty= -p 4242')
    expect(command).toContain('[ -n "$TMUX_PANE" ] || exit 1')
    expect(command).toContain(TMUX_FORMAT)
    expect(() => probeCommand(-1)).toThrow(/pid/)
  })
  it('builds a probe that compares the pane tty with a tty path the harness read itself', () => {
    const command = probeCommand('/dev/pts/7')
    expect(command).toContain("self_tty='/dev/pts/7'")
    expect(command).not.toContain('ps -o')
    expect(() => probeCommand("/dev/pts/1'; rm -rf /")).toThrow(/tty path/)
  })
  it('decodes the controlling terminal from /proc/self/stat', () => {
    // tty_nr 34816 = major 136, minor 0 -> /dev/pts/0; a command name with spaces and ')'.
    expect(controllingTty('123 (a b) c) S 1 123 123 34816 0 0')).toBe('/dev/pts/0')
    expect(controllingTty('123 (node) S 1 123 123 34821 0 0')).toBe('/dev/pts/5')
    expect(controllingTty('123 (node) S 1 123 123 0 0 0')).toBeNull()
    expect(controllingTty('123 (node) S 1 123 123 1025 0 0')).toBe('/dev/tty1')
    expect(controllingTty('garbage')).toBeUndefined()
  })
})

describe('tmux-context scheduling', () => {
  it('runs only on the first step of a turn', async () => {
    const state = { output: line('one'), commands: [] as string[] }
    const harness = await createHarness({
      script: [{ toolCalls: [{ name: 'missing_tool', arguments: {} }] }, { text: 'done' }],
      plugins: [[cannedShell(state)], [TmuxContext, {}]],
    })
    await harness.prompt('go')
    expect(harness.model.requests).toHaveLength(2)
    expect(state.commands).toHaveLength(1)
    expect(injections([...harness.session.events])).toHaveLength(1)
    await harness.dispose()
  })

  it('re-injects a changed reading once the refresh interval has passed', async () => {
    let now = 1_000_000
    const session = new Session({ cwd: process.cwd(), clock: () => now })
    const state = { output: line('one'), commands: [] as string[] }
    const { harness } = await setup(state, { refreshIntervalMs: 60_000 }, session)
    await harness.prompt('1')
    state.output = line('two')
    now += 59_000
    await harness.prompt('2')
    expect(state.commands).toHaveLength(1) // inside the window the probe does not even run
    now += 2_000
    await harness.prompt('3')
    const texts = injections([...harness.session.events])
    expect(texts).toHaveLength(2)
    expect(texts[1]).toMatch(/^tmux location \(turn 3\):\n.*"two"/)
    // Unchanged after the interval: probed, nothing added.
    now += 120_000
    await harness.prompt('4')
    expect(state.commands).toHaveLength(3)
    expect(injections([...harness.session.events])).toHaveLength(2)
    await harness.dispose()
  })

  it('records nothing when a downstream pre-step listener rejects the step', async () => {
    const state = { output: line('one'), commands: [] as string[] }
    const { harness } = await setup(state)
    const gate = await harness.mount({
      name: 'gate',
      apply(ctx: Context) {
        ctx.on('agent/pre-step', async () => ({
          action: 'reject' as const,
          code: 'NO',
          reason: 'blocked for the test',
        }))
      },
    })
    const blocked = await harness.prompt('1')
    expect(blocked.reason).toBe('blocked')
    expect(injections([...harness.session.events])).toEqual([])
    await gate.dispose()
    await harness.prompt('2')
    expect(injections([...harness.session.events])).toEqual([expect.stringMatching(/^tmux location \(turn 2\):/)])
    await harness.dispose()
  })

  it('contains executor refusals as warnings and treats failures as no-ops', async () => {
    for (const refuse of ['resolve', 'run'] as const) {
      const state = { output: line('one'), refuse, commands: [] as string[] }
      const { harness, logs } = await setup(state)
      const result = await harness.prompt('hi')
      expect(result.reason).toBe('completed')
      expect(injections([...harness.session.events])).toEqual([])
      expect(logs.join('\n')).toMatch(/refused the tmux probe/)
      await harness.dispose()
    }
    for (const output of ['not a reading\n', line('x')]) {
      const state = { output, exitCode: output.startsWith('not') ? 0 : 1, commands: [] as string[] }
      const { harness, logs } = await setup(state)
      expect((await harness.prompt('hi')).reason).toBe('completed')
      expect(injections([...harness.session.events])).toEqual([])
      expect(logs).toEqual([])
      await harness.dispose()
    }
  })

  it('does nothing without a shell executor, and stops when unloaded', async () => {
    const harness = await createHarness({ script: [{ text: 'a' }, { text: 'b' }], plugins: [[TmuxContext, {}]] })
    expect((await harness.prompt('hi')).reason).toBe('completed')
    expect(injections([...harness.session.events])).toEqual([])
    await harness.dispose()

    const state = { output: line('one'), commands: [] as string[] }
    const h2 = await createHarness({ script: [{ text: 'a' }, { text: 'b' }], plugins: [[cannedShell(state)]] })
    const mounted = await h2.mount(TmuxContext, {})
    await h2.prompt('1')
    await mounted.dispose()
    state.output = line('two')
    await h2.prompt('2')
    expect(injections([...h2.session.events])).toHaveLength(1)
    expect(state.commands).toHaveLength(1)
    await h2.dispose()
  })

  it('refuses a negative refreshIntervalMs', () => {
    expect(() => TmuxContext.Config({ refreshIntervalMs: -1 })).toThrow()
    expect(() => TmuxContext.Config({ refreshIntervalMs: 1.5 })).toThrow()
    expect(TmuxContext.Config({})).toEqual({ refreshIntervalMs: 0, timeoutMs: 5000 })
  })
})
