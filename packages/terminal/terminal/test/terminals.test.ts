// ctx.terminals over the real subprocess-local PTY: a Python REPL, a persistent bash, the owner
// fence, a flooding program, signals, and reaping when the owner goes away.
import { mkdtempSync, realpathSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { Context } from 'cordis'
import { spawnSync } from 'node:child_process'
import LocalSubprocessService from '@dsh/subprocess-local'
import LocalSandbox from '@dsh/sandbox-local'
import SandboxPolicyService from '@dsh/sandbox-policy'
import TerminalService, { TerminalError, cleanTerminalText, type TerminalConfig } from '../src/index.ts'

let ctx: Context | undefined
afterEach(async () => {
  // App stop closes every terminal still open (and is itself under test here).
  if (ctx) await ctx.parallel('app/stopping' as never, {} as never)
  ctx = undefined
})

async function boot(config: Partial<TerminalConfig> = {}) {
  ctx = new Context()
  await ctx.plugin(LocalSubprocessService, {} as never)
  await ctx.plugin(TerminalService, config)
  const cwd = realpathSync(mkdtempSync(join(tmpdir(), 'dsh-terminal-')))
  return { c: ctx, cwd }
}

const me = { agentId: 'agent-1', sessionId: 's1' }

/** Reads until `pattern` shows up after `since` (bounded by the number of tries, not by time asserts). */
async function readUntil(c: Context, id: string, since: number, pattern: RegExp, owner = me) {
  let text = ''
  for (let i = 0; i < 50; i++) {
    const out = await c.terminals.read(id, owner, { since, waitMs: 500, quietMs: 100 })
    text = out.text
    if (pattern.test(text)) return out
  }
  throw new Error(`never saw ${pattern} in ${JSON.stringify(text)}`)
}

function error(fn: () => unknown): TerminalError {
  try {
    fn()
  } catch (e) {
    expect(TerminalError.is(e)).toBe(true)
    return e as TerminalError
  }
  throw new Error('expected a TerminalError')
}

describe('ctx.terminals', () => {
  it('cleans terminal control sequences and keeps an unfinished one for the next chunk', () => {
    expect(cleanTerminalText('\x1b[1;32mgreen\x1b[0m\r\n\x1b]0;title\x07ok')).toEqual({ text: 'green\nok', rest: '' })
    expect(cleanTerminalText('abc\x1b[3')).toEqual({ text: 'abc', rest: '\x1b[3' })
  })

  it('python3 -i: send 1+1, read 2', { timeout: 30_000 }, async () => {
    const { c, cwd } = await boot()
    const term = await c.terminals.open({ owner: me, cwd, command: ['python3', '-i', '-q'] })
    expect(term).toMatchObject({ id: 'term-1', status: 'running', confinement: 'none' })
    await readUntil(c, term.id, 0, />>> $/)
    const before = (await c.terminals.read(term.id, me)).to
    c.terminals.write(term.id, me, '1+1\n')
    const out = await readUntil(c, term.id, before, /^2$/m)
    expect(out.text).toMatch(/1\+1\n2\n/)
    await c.terminals.close(term.id, me)
  })

  it('a persistent bash keeps cd and exported variables between inputs', { timeout: 30_000 }, async () => {
    const { c, cwd } = await boot()
    const term = await c.terminals.open({ owner: me, cwd })
    c.terminals.write(term.id, me, 'mkdir -p sub && cd sub && export GREETING=hello-terminal\n')
    let cursor = (await readUntil(c, term.id, 0, /\$ $/)).to
    c.terminals.write(term.id, me, 'echo "$GREETING in $(basename "$PWD")"\n')
    const out = await readUntil(c, term.id, cursor, /hello-terminal in sub/)
    cursor = out.to
    c.terminals.write(term.id, me, 'exit 3\n')
    for (let i = 0; i < 50 && c.terminals.get(term.id, me).status === 'running'; i++)
      await c.terminals.read(term.id, me, { since: cursor, waitMs: 200 })
    expect(c.terminals.get(term.id, me)).toMatchObject({ status: 'exited', exitCode: 3 })
    expect(error(() => c.terminals.write(term.id, me, 'echo\n')).code).toBe('TERMINAL_EXITED')
  })

  it('another agent cannot address a terminal it does not own; bad requests are refused', {
    timeout: 30_000,
  }, async () => {
    const { c, cwd } = await boot({ maxPerAgent: 1 })
    const term = await c.terminals.open({ owner: me, cwd })
    const other = { agentId: 'agent-2' }
    expect(error(() => c.terminals.write(term.id, other, 'echo hi\n'))).toMatchObject({
      code: 'UNKNOWN_TERMINAL',
      message: 'no terminal "term-1" of this agent',
    })
    await expect(c.terminals.read(term.id, other)).rejects.toMatchObject({ code: 'UNKNOWN_TERMINAL' })
    await expect(c.terminals.close(term.id, other)).rejects.toMatchObject({ code: 'UNKNOWN_TERMINAL' })
    expect(c.terminals.list(other)).toEqual([])
    await expect(c.terminals.open({ owner: me, cwd })).rejects.toMatchObject({ code: 'TOO_MANY_TERMINALS' })
    await expect(c.terminals.open({ owner: { agentId: '' }, cwd })).rejects.toMatchObject({ code: 'INVALID_REQUEST' })
    await expect(c.terminals.read(term.id, me, { since: -1 })).rejects.toMatchObject({ code: 'INVALID_REQUEST' })
    expect(c.terminals.get(term.id, me).status).toBe('running')
  })

  it('a flooding program keeps only the newest output; SIGINT stops it and the shell lives on', {
    timeout: 30_000,
  }, async () => {
    const { c, cwd } = await boot({ retainChars: 5000 })
    const term = await c.terminals.open({ owner: me, cwd })
    c.terminals.write(term.id, me, 'yes flood-line\n')
    await readUntil(c, term.id, 0, /flood-line\nflood-line/)
    c.terminals.signal(term.id, me, 'SIGINT')
    const cursor = (await c.terminals.read(term.id, me, { waitMs: 500 })).to
    c.terminals.write(term.id, me, 'echo still-alive\n')
    await readUntil(c, term.id, cursor, /still-alive\n/)
    const all = await c.terminals.read(term.id, me, { since: 0 })
    expect(all.text.length).toBeLessThanOrEqual(5000)
    expect(all.dropped).toBeGreaterThan(0)
    expect(c.terminals.get(term.id, me).outputChars).toBeGreaterThan(5000)
  })

  it('the owner agent going away closes its terminals', { timeout: 30_000 }, async () => {
    const { c, cwd } = await boot()
    const term = await c.terminals.open({ owner: me, cwd, command: ['sleep', '60'] })
    c.emit('agent/disposed', { id: 'agent-1' } as never)
    // Closing terminates the child (a signal, then its exit): wait for that, with room for a loaded machine.
    await vi.waitFor(() => expect(c.terminals.list(me)).toEqual([]), { timeout: 25_000, interval: 20 })
    expect(error(() => c.terminals.get(term.id, me)).code).toBe('UNKNOWN_TERMINAL')
  })
})

describe('ctx.terminals under the local sandbox', () => {
  const bwrap =
    spawnSync('bwrap', ['--ro-bind', '/', '/', '--dev', '/dev', '--unshare-pid', '--', 'true'], { stdio: 'ignore' })
      .status === 0

  it.skipIf(!bwrap)(
    'a terminal runs confined on its own PTY: the sandbox starts no spawn server for it',
    { timeout: 30_000 },
    async () => {
      ctx = new Context()
      await ctx.plugin(LocalSubprocessService, {} as never)
      await ctx.plugin(LocalSandbox, { runner: 'bwrap', prewarmDelayMs: 0 })
      const cwd = realpathSync(mkdtempSync(join(tmpdir(), 'dsh-terminal-sandboxed-')))
      await ctx.plugin(SandboxPolicyService, { fallbackRoot: cwd })
      await ctx.plugin(TerminalService, {})
      const c = ctx
      const sandbox = c.sandbox as LocalSandbox
      const term = await c.terminals.open({
        owner: me,
        cwd,
        command: [
          'bash',
          '--noprofile',
          '--norc',
          '-c',
          'touch /opt/escape-$$ 2>/dev/null && echo wrote || echo refused; echo "tty: $(tty)"',
        ],
      })
      expect(term.confinement).toBe('bwrap')
      const out = await readUntil(c, term.id, 0, /tty: /)
      expect(out.text).toContain('refused')
      // On a terminal (bwrap shows the PTY as /dev/console inside), not on pipes.
      expect(out.text).toMatch(/tty: \/dev\//)
      expect(out.text).not.toContain('not a tty')
      // A terminal's command is the PTY's own process (launcher: false): no server was started.
      expect(sandbox.spawnServers).toBe(0)
      // The counter is live: a plain command under the same policy does start one.
      const policy = c.sandboxPolicy.resolve({ cwd })
      const invocation = await sandbox.wrap({ argv: ['true'], cwd, policy })
      expect(invocation.launcher).toBeDefined()
      expect(sandbox.spawnServers).toBe(1)
    },
  )
})
