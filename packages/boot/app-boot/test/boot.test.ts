import { afterEach, describe, expect, it } from 'vitest'
import { join } from 'node:path'
import { Context } from 'cordis'
import { BootError, bootComposition, composeLayers, parseLayer, readLayerFile, type BootedTree } from '../src/index.ts'
import { FIXTURES, INSTALL_BASE } from './helpers.ts'
import type Counter from './fixtures/counter.ts'

// Row modules go through vitest's transform (the CLI registers tsx instead).
const importModule = (url: string) => import(/* @vite-ignore */ url)
const trees: BootedTree[] = []
afterEach(async () => {
  await Promise.all(trees.splice(0).map((t) => t.dispose()))
})

async function boot(text: string, file = join(FIXTURES, 'inline.yml')) {
  const comp = composeLayers([parseLayer(text, file, 'test layer')], INSTALL_BASE, FIXTURES)
  const tree = await bootComposition(comp, { bootInfo: { appArgs: ['hi'] }, importModule })
  trees.push(tree)
  return tree
}

async function bootFailure(text: string): Promise<BootError> {
  try {
    await boot(text)
  } catch (error) {
    expect(error).toBeInstanceOf(BootError)
    for (const line of (error as Error).message.split('\n')) expect(line).toMatch(/^dsh: boot failed: row \S+ \(.+\): /)
    expect((error as Error).message).not.toMatch(/\n\s+at /)
    return error as BootError
  }
  throw new Error('expected the boot to fail')
}

describe('bootComposition', () => {
  it('boots a real tree from YAML rows and unwinds every registration on dispose', async () => {
    const comp = composeLayers([readLayerFile(join(FIXTURES, 'tree.yml'), 'tree')], INSTALL_BASE, FIXTURES)
    const tree = await bootComposition(comp, { importModule })
    const { ctx } = tree
    expect((ctx.get('counter') as Counter | undefined)?.value).toBe(3)
    // The prepended listener runs first although its row comes after the consumer's.
    const payload = { trail: [] as string[] }
    expect(await ctx.waterfall('fixture/value', payload, () => payload.trail)).toEqual(['pre-2', 'consumer:3'])
    expect(Object.keys(tree.loader.store).sort()).toEqual(['consumer', 'counter', 'prepend'])

    await tree.dispose()
    expect(ctx.get('counter')).toBeUndefined()
    const after = { trail: [] as string[] }
    expect(await ctx.waterfall('fixture/value', after, () => after.trail)).toEqual([])
  })

  it('provides ctx.bootInfo with the app arguments', async () => {
    const tree = await boot(`- insert:\n    - { id: cmdline, name: "@dsh/cmdline" }\n`)
    expect(tree.ctx.get('bootInfo')?.appArgs).toEqual(['hi'])
    expect(tree.ctx.get('cmdlineArgs')?.positionals).toEqual(['hi'])
  })

  it('evaluates !!js in disabled at mount: a false result mounts the row, a true one does not', async () => {
    const row = `- insert:\n    - { id: counter, name: ./counter.ts, config: { start: 1 }, disabled: !!js "process.env.DSH_TEST_OFF === '1'" }\n`
    try {
      process.env.DSH_TEST_OFF = '0'
      const on = await boot(row)
      expect((on.ctx.get('counter') as Counter | undefined)?.value).toBe(1)
      await on.dispose()
      process.env.DSH_TEST_OFF = '1'
      const off = await boot(row)
      expect(off.ctx.get('counter')).toBeUndefined()
      expect(Object.keys(off.loader.store)).toEqual(['counter'])
    } finally {
      delete process.env.DSH_TEST_OFF
    }
  })

  it('lets a plugin end the app with ctx.loader.exit(code)', async () => {
    const tree = await boot('[]')
    tree.loader.exit(7)
    expect(await tree.exited).toBe(7)
  })

  it('fails on a config that does not match the plugin schema, naming row and field', async () => {
    const e = await bootFailure(`- insert:\n    - { id: counter, name: ./counter.ts, config: { start: many } }\n`)
    expect(e.message).toBe(
      'dsh: boot failed: row counter (./counter.ts): invalid config: field config.start: expected number but got many',
    )
    expect(e.failures[0].kind).toBe('config')
  })

  it('fails on an unmet inject, naming the missing service', async () => {
    const e = await bootFailure(`- insert:\n    - { id: consumer, name: ./consumer.ts }\n`)
    expect(e.message).toBe(
      'dsh: boot failed: row consumer (./consumer.ts): unmet inject: "counter" (no active row provides it)',
    )
  })

  it('honours an inject added by the row itself', async () => {
    const e = await bootFailure(`- insert:\n    - { id: prepend, name: ./prepend.ts, inject: [nothingProvidesThis] }\n`)
    expect(e.failures).toEqual([
      {
        id: 'prepend',
        name: './prepend.ts',
        kind: 'inject',
        cause: 'unmet inject: "nothingProvidesThis" (no active row provides it)',
      },
    ])
  })

  it('fails on an unresolvable name before mounting anything', async () => {
    const e = await bootFailure(
      `- insert:\n    - { id: counter, name: ./counter.ts, config: { start: 1 } }\n    - { id: ghost, name: "@dsh/does-not-exist" }\n`,
    )
    expect(e.failures).toHaveLength(1)
    expect(e.message).toBe(
      `dsh: boot failed: row ghost (@dsh/does-not-exist): cannot resolve module "@dsh/does-not-exist" from ${join(FIXTURES, 'inline.yml')} or the dsh installation`,
    )
  })

  it('fails when apply throws or the module throws at import, reporting roots before inject fallout', async () => {
    const e = await bootFailure(`- insert:
    - { id: broken, name: ./throws-apply.ts }
    - { id: bad-import, name: ./throws-import.ts }
    - { id: consumer, name: ./consumer.ts }
`)
    expect(e.failures.map((f) => [f.id, f.kind])).toEqual([
      ['broken', 'apply'],
      ['bad-import', 'import'],
    ])
    expect(e.failures[0].cause).toBe('apply failed: the fixture refuses to start')
    expect(e.failures[1].cause).toBe('cannot load: broken at import time')
  })

  it('disposes the partial tree when the boot fails', async () => {
    const comp = composeLayers(
      [
        parseLayer(
          `- insert:
    - { id: counter, name: ./counter.ts, config: { start: 1 } }
    - { id: prepend, name: ./prepend.ts }
    - { id: broken, name: ./throws-apply.ts }
`,
          join(FIXTURES, 'x.yml'),
          'x',
        ),
      ],
      INSTALL_BASE,
      FIXTURES,
    )
    const context = new Context()
    await expect(bootComposition(comp, { importModule, context })).rejects.toThrow(BootError)
    expect(context.get('counter')).toBeUndefined()
    const payload = { trail: [] as string[] }
    expect(await context.waterfall('fixture/value', payload, () => payload.trail)).toEqual([])
  })

  it('reports a failing !!js disabled expression by row and field', async () => {
    const e = await bootFailure(`- insert:\n    - { id: counter, name: ./counter.ts, disabled: !!js "nope.x" }\n`)
    expect(e.message).toBe(
      'dsh: boot failed: row counter (./counter.ts): field disabled: !!js nope.x: nope is not defined',
    )
  })
})
