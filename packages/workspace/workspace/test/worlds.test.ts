// The world a workspace chooses (`workspaces.create {path, world}`): stored with it and kept across
// a restart; `local` is always known, other worlds only once a plugin registers them; an unknown
// world and a folder moved to another world are refused in one sentence, storing nothing.
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Context } from 'cordis'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import JsonStorage from '@dsh/storage-json'
import Workspaces from '../src/index.ts'

let dir: string
const cleanup: Array<() => unknown> = []
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'dsh-workspace-worlds-'))
  mkdirSync(join(dir, 'here'))
  mkdirSync(join(dir, 'there'))
})
afterEach(async () => {
  for (const step of cleanup.splice(0).reverse()) await step()
  rmSync(dir, { recursive: true, force: true })
})

async function boot() {
  const ctx = new Context()
  const fibers = [await ctx.plugin(JsonStorage, { root: join(dir, 'storage') }), await ctx.plugin(Workspaces, {})]
  await new Promise<void>((resolve) => ctx.inject(['workspaces'], () => resolve()))
  const close = async () => {
    for (const fiber of fibers.reverse()) await fiber.dispose()
  }
  cleanup.push(close)
  return { ctx, close }
}

describe('workspace worlds', () => {
  it('stores the chosen world, refuses unknown ones and a move to another world', async () => {
    const first = await boot()
    const workspaces = first.ctx.workspaces
    expect(workspaces.worlds()).toEqual({ worlds: [{ name: 'local', description: 'this machine' }], default: 'local' })
    // Nobody registered e2b yet: one sentence naming what is known, nothing stored.
    await expect(workspaces.create({ path: join(dir, 'there'), world: 'e2b' })).rejects.toThrow(
      'world: unknown world "e2b" (known: local)',
    )
    expect(await workspaces.list()).toEqual([])
    const off = workspaces.registerWorld({ name: 'e2b', description: 'a sandbox' }, { isDefault: true })
    expect(workspaces.worlds().default).toBe('e2b')
    const here = (await workspaces.create({ path: join(dir, 'here'), world: 'local' })).workspace
    const there = (await workspaces.create({ path: join(dir, 'there'), world: 'e2b' })).workspace
    expect([here.world, there.world]).toEqual(['local', 'e2b'])
    await expect(workspaces.create({ path: join(dir, 'here'), world: 'mars' })).rejects.toMatchObject({
      code: 'INVALID_PARAMS',
      field: 'world',
      message: 'world: unknown world "mars" (known: local, e2b)',
    })
    // The same folder again: in its own world it is the same workspace; in another, refused.
    expect(await workspaces.create({ path: join(dir, 'there'), world: 'e2b' })).toMatchObject({ created: false })
    await expect(workspaces.create({ path: join(dir, 'there'), world: 'local' })).rejects.toMatchObject({
      code: 'WORKSPACE_WORLD',
      status: 409,
    })
    expect(() => workspaces.registerWorld({ name: 'e2b', description: 'again' })).toThrow(/already registered/)
    off()
    expect(workspaces.worlds()).toEqual({ worlds: [{ name: 'local', description: 'this machine' }], default: 'local' })
    await first.close()
    cleanup.length = 0

    // Kept across a restart, and a workspace without a choice takes the default.
    const second = await boot()
    const again = await second.ctx.workspaces.list()
    expect(again.map((w) => [w.path, w.world])).toEqual([
      [join(dir, 'here'), 'local'],
      [join(dir, 'there'), 'e2b'],
    ])
    expect(second.ctx.workspaces.worldOf({})).toBe('local')
  })
})
