import { describe, expect, it } from 'vitest'
import { Context } from 'cordis'
import CmdlineArgs, { parseView, splitOptionalValues } from '../src/index.ts'

describe('parseView', () => {
  it('separates positionals from flags without consuming values', () => {
    const v = parseView(['fix the bug', '--json', '--model=ds', '-vq', '--tag=a', '--tag=b', '--', '--not-a-flag'])
    expect(v.positionals).toEqual(['fix the bug', '--not-a-flag'])
    expect(v.flags.json).toEqual([true])
    expect(v.flags.model).toEqual(['ds'])
    expect(v.flags.v).toEqual([true])
    expect(v.flags.q).toEqual([true])
    expect(v.flags.tag).toEqual(['a', 'b'])
  })
  it('treats negative numbers and a lone dash as positionals', () => {
    expect(parseView(['-1', '-']).positionals).toEqual(['-1', '-'])
  })
})

describe('ctx.cmdlineArgs', () => {
  it('reads explicit args from config', async () => {
    const ctx = new Context()
    const fiber = ctx.plugin(CmdlineArgs, { args: ['task', '--port=8080', '--help'] })
    await fiber
    const c = ctx.get('cmdlineArgs')!
    expect(c.argv).toEqual(['task', '--port=8080', '--help'])
    expect(c.has('help')).toBe(true)
    expect(c.value('port')).toBe('8080')
    expect(c.value('help')).toBeUndefined()
    expect(c.parse({ port: { type: 'string' }, help: { type: 'boolean' } }).values).toEqual({
      port: '8080',
      help: true,
    })
    await fiber.dispose()
    expect(ctx.get('cmdlineArgs')).toBeUndefined()
  })

  it('falls back to the boot record provided by app-boot', async () => {
    const ctx = new Context()
    ctx.provide('bootInfo', { appArgs: ['hello', '--x'] })
    await ctx.plugin(CmdlineArgs, {})
    expect(ctx.get('cmdlineArgs')!.positionals).toEqual(['hello'])
  })

  it('rejects a non-array args config', async () => {
    const ctx = new Context()
    const fiber = ctx.plugin(CmdlineArgs, { args: 'oops' as unknown as string[] })
    await expect(fiber).rejects.toThrow(/args/)
  })

  it('rejects unknown flags in strict parse', async () => {
    const ctx = new Context()
    await ctx.plugin(CmdlineArgs, { args: ['--bogus'] })
    expect(() => ctx.get('cmdlineArgs')!.parse({ port: { type: 'string' } })).toThrow(/bogus/)
  })
})

describe('splitOptionalValues', () => {
  const resume = [{ long: 'resume', short: 'r' }]
  it('removes a flag with no value (end, option next, or `--x=`) and names it; keeps a valued one', () => {
    expect(splitOptionalValues(['-r'], resume)).toEqual({ args: [], bare: new Set(['resume']) })
    expect(splitOptionalValues(['-r', '-p', 'x'], resume)).toEqual({ args: ['-p', 'x'], bare: new Set(['resume']) })
    expect(splitOptionalValues(['--resume=', 'task'], resume)).toEqual({ args: ['task'], bare: new Set(['resume']) })
    expect(splitOptionalValues(['--resume', 'abc'], resume)).toEqual({ args: ['--resume', 'abc'], bare: new Set() })
    // A lone `-` is a value (POSIX), and nothing after `--` is looked at.
    expect(splitOptionalValues(['-r', '-'], resume)).toEqual({ args: ['-r', '-'], bare: new Set() })
    expect(splitOptionalValues(['--', '-r'], resume)).toEqual({ args: ['--', '-r'], bare: new Set() })
    expect(splitOptionalValues(['-x', '-r', '--'], resume)).toEqual({ args: ['-x', '--'], bare: new Set(['resume']) })
  })
})
