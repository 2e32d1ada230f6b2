import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { Context } from 'cordis'
import WebServer from '@dsh/webserver'
import ApiGateway from '@dsh/api-gateway'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import PluginInventory, { packageOfModule } from '../src/index.ts'
import { pluginsList } from '../src/contract.ts'
import { bootLoader, writePackage } from './fixtures.ts'

let root: string
beforeEach(() => {
  root = mkdtempSync(join(tmpdir(), 'dsh-inventory-'))
})
afterEach(() => rmSync(root, { recursive: true, force: true }))

const OK = `export const name = 'ok'; export function apply() {}`
const BROKEN = `export const name = 'broken'; export function apply() { throw new Error('kaput: the widget is missing\\nsecond line') }`

describe('pluginInventory.list()', () => {
  it('reports every row of the Loader tree in order: id, module, package, enabled, state, error', async () => {
    const ok = writePackage(root, '@fixture/ok', OK)
    const broken = writePackage(root, '@fixture/broken', BROKEN)
    const off = writePackage(root, 'fixture-off', OK)
    const nested = writePackage(root, '@fixture/nested', OK)
    const ctx = new Context()
    const loader = await bootLoader(ctx, [
      { id: 'ok', name: ok },
      { id: 'broken', name: broken },
      { id: 'off', name: off, disabled: true },
      { id: 'grp', name: 'cordis:group', group: true, config: [{ id: 'inner', name: nested }] },
    ])
    const fiber = ctx.plugin(PluginInventory)
    await fiber
    const rows = ctx.pluginInventory.list()
    expect(rows).toEqual([
      { id: 'ok', module: ok, package: '@fixture/ok', enabled: true, state: 'active' },
      {
        id: 'broken',
        module: broken,
        package: '@fixture/broken',
        enabled: true,
        state: 'failed',
        error: 'kaput: the widget is missing',
      },
      { id: 'off', module: off, package: 'fixture-off', enabled: false, state: 'disabled' },
      { id: 'inner', module: nested, package: '@fixture/nested', enabled: true, state: 'active', parent: 'grp' },
    ])
    // Every row satisfies the contract's result schema (what a client validates against).
    expect(() => pluginsList.result({ plugins: rows })).not.toThrow()

    // The answer follows the tree: disabling a row shows at the next call.
    await loader.root.update([
      { id: 'ok', name: ok, disabled: true },
      { id: 'broken', name: broken },
      { id: 'off', name: off, disabled: true },
      { id: 'grp', name: 'cordis:group', group: true, config: [{ id: 'inner', name: nested }] },
    ] as never)
    expect(ctx.pluginInventory.list()[0]).toMatchObject({ id: 'ok', enabled: false, state: 'disabled' })
    await fiber.dispose()
  })

  it('answers POST /api/plugins.list over HTTP while a gateway is mounted; the method goes when the row unloads', async () => {
    const ok = writePackage(root, '@fixture/ok', OK)
    const host = new Context().plugin({ name: 'test-host', apply() {} })
    await host
    const ctx = host.ctx
    await bootLoader(ctx, [{ id: 'ok', name: ok }])
    await ctx.plugin(WebServer, { port: 0 } as never)
    await ctx.plugin(ApiGateway, { sessions: false } as never)
    const inventory = ctx.plugin(PluginInventory)
    await inventory
    const port = (ctx.get('webServer') as WebServer).port
    const post = () =>
      fetch(`http://127.0.0.1:${port}/api/plugins.list`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: '{}',
      })
    const res = await post()
    expect(res.status).toBe(200)
    expect(await res.json()).toEqual({
      result: { plugins: [{ id: 'ok', module: ok, package: '@fixture/ok', enabled: true, state: 'active' }] },
    })
    await inventory.dispose()
    const gone = await post()
    expect(gone.status).toBe(404)
    expect(((await gone.json()) as { error: { code: string } }).error.code).toBe('UNKNOWN_METHOD')
    await host.dispose()
  })

  it('is an empty list on a bare Context with no Loader', async () => {
    const ctx = new Context()
    await ctx.plugin(PluginInventory)
    expect(ctx.pluginInventory.list()).toEqual([])
  })

  it('packageOfModule: nearest package.json name for file URLs, the package part of bare names', () => {
    const url = writePackage(root, '@fixture/deep', OK)
    expect(packageOfModule(url)).toBe('@fixture/deep')
    expect(packageOfModule('@scope/pkg/sub/path')).toBe('@scope/pkg')
    expect(packageOfModule('plain-pkg')).toBe('plain-pkg')
    expect(packageOfModule('cordis:group')).toBeUndefined()
    expect(packageOfModule('./relative.js')).toBeUndefined()
  })
})
