import { afterEach, describe, expect, it } from 'vitest'
import type { Context } from 'cordis'
import { createHarness, type Harness } from '@dsh/agent-loop-testkit'
import CommandRegistry, { parseCommandLine } from '../src/index.ts'

const harnesses: Harness[] = []
afterEach(async () => {
  for (const h of harnesses.splice(0)) await h.dispose()
})

async function harness() {
  const h = await createHarness({ script: [{ text: 'model answer' }], plugins: [[CommandRegistry]] })
  harnesses.push(h)
  return h
}

const echoCommand = {
  name: 'echo-command',
  inject: ['commands'],
  apply(ctx: Context) {
    ctx.commands.register({
      name: 'echo',
      description: 'Echo the arguments.',
      usage: '<text>',
      run: (args, { agent, session }) => `${agent.id === `agent-${session.id}` ? 'ok' : 'bad'}: ${args}`,
    })
  },
}

describe('command lines', () => {
  it('parses /name and /name args, and nothing else', () => {
    expect(parseCommandLine('/compact')).toEqual({ name: 'compact', args: '' })
    expect(parseCommandLine('  /compact   the tests \n')).toEqual({ name: 'compact', args: 'the tests' })
    expect(parseCommandLine('/compact\nline two')).toEqual({ name: 'compact', args: 'line two' })
    for (const text of [
      'compact',
      '/usr/bin/env is missing',
      '//compact',
      '/Compact',
      '/',
      '/ compact',
      'say /compact',
    ]) {
      expect(parseCommandLine(text)).toBeUndefined()
    }
  })
})

describe('ctx.commands', () => {
  it('dispatches a registered command without a model turn', async () => {
    const h = await harness()
    await h.mount(echoCommand)
    const result = await h.ctx.commands.dispatch(h.agent, '/echo hello there')
    expect(result).toEqual({ handled: true, name: 'echo', ok: true, output: 'ok: hello there' })
    expect(h.model.requests).toHaveLength(0)
    expect(h.session.length).toBe(0)
    expect(h.ctx.commands.list()).toEqual([
      { name: 'echo', description: 'Echo the arguments.', usage: '<text>' },
      { name: 'help', description: 'List the available commands.' },
    ])
    const help = await h.ctx.commands.dispatch(h.agent, '/help')
    expect(help).toMatchObject({ ok: true, output: expect.stringContaining('/echo <text>  Echo the arguments.') })
  })

  it('passes other lines through, reports unknown and failing commands in one line', async () => {
    const h = await harness()
    h.ctx.commands.register({
      name: 'boom',
      description: 'Fails.',
      run: () => {
        throw new Error('it broke')
      },
    })
    expect(await h.ctx.commands.dispatch(h.agent, 'please fix /usr/lib')).toEqual({ handled: false })
    expect(await h.ctx.commands.dispatch(h.agent, '/nope')).toEqual({
      handled: true,
      name: 'nope',
      ok: false,
      error: { code: 'UNKNOWN_COMMAND', message: 'unknown command /nope; available: /boom, /help' },
    })
    expect(await h.ctx.commands.dispatch(h.agent, '/boom')).toEqual({
      handled: true,
      name: 'boom',
      ok: false,
      error: { code: 'COMMAND_FAILED', message: '/boom failed: it broke' },
    })
  })

  it('rejects bad and duplicate registrations, and unwinds on dispose and unload', async () => {
    const h = await harness()
    const run = () => {}
    expect(() => h.ctx.commands.register({ name: 'Bad Name', description: 'x', run })).toThrow(/invalid name/)
    expect(() => h.ctx.commands.register({ name: 'ok', description: '', run })).toThrow(/description/)
    expect(() => h.ctx.commands.register({ name: 'ok', description: 'x' } as never)).toThrow(/run/)
    const off = h.ctx.commands.register({ name: 'ok', description: 'x', run })
    expect(() => h.ctx.commands.register({ name: 'ok', description: 'y', run })).toThrow(/already registered/)
    off()
    expect(h.ctx.commands.get('ok')).toBeUndefined()
    const plugin = await h.mount(echoCommand)
    expect(h.ctx.commands.get('echo')).toMatchObject({ name: 'echo' })
    await plugin.dispose()
    expect(h.ctx.commands.get('echo')).toBeUndefined()
    expect(await h.ctx.commands.dispatch(h.agent, '/echo x')).toMatchObject({
      ok: false,
      error: { code: 'UNKNOWN_COMMAND' },
    })
  })

  it('lists and dispatches per-agent commands from a source; registered names win; unwinds', async () => {
    const h = await harness()
    const seen: string[] = []
    const off = h.ctx.commands.provide({
      id: 'by-cwd',
      list: (agent) => [
        { name: 'where', description: 'Where the agent works.', run: () => `cwd=${agent.cwd}` },
        { name: 'help', description: 'A shadowed help.', run: () => 'shadowed' },
        { name: 'Bad Name', description: 'skipped', run: () => 'x' },
      ],
    })
    h.ctx.on('commands/changed', () => seen.push('changed'))
    expect(() => h.ctx.commands.provide({ id: 'by-cwd', list: () => [] })).toThrow(/already provided/)
    expect(() => h.ctx.commands.provide({ id: '' } as never)).toThrow(/expected/)
    // Without an agent only registered commands; with one, the source's too, marked with its id.
    expect(h.ctx.commands.list().map((c) => c.name)).toEqual(['help'])
    expect(h.ctx.commands.list(h.agent)).toEqual([
      { name: 'help', description: 'List the available commands.' },
      { name: 'where', description: 'Where the agent works.', source: 'by-cwd' },
    ])
    expect(h.ctx.commands.get('where', h.agent)).toMatchObject({ source: 'by-cwd' })
    expect(h.ctx.commands.get('where')).toBeUndefined()
    expect(await h.ctx.commands.dispatch(h.agent, '/where')).toEqual({
      handled: true,
      name: 'where',
      ok: true,
      output: `cwd=${h.agent.cwd}`,
    })
    const help = await h.ctx.commands.dispatch(h.agent, '/help')
    expect(help).toMatchObject({ ok: true, output: expect.stringContaining('/where  Where the agent works.') })
    // A throwing source costs its own commands only.
    h.ctx.commands.provide({
      id: 'broken',
      list: () => {
        throw new Error('no')
      },
    })
    expect(h.ctx.commands.list(h.agent).map((c) => c.name)).toEqual(['help', 'where'])
    off()
    expect(seen).toEqual(['changed', 'changed'])
    expect(await h.ctx.commands.dispatch(h.agent, '/where')).toMatchObject({ error: { code: 'UNKNOWN_COMMAND' } })
  })
})
