// The launcher's `--world` flag: `e2b` adds the world-e2b bundle's patch layer, `local` adds nothing, and a
// missing or unknown name is one clear error.
import { existsSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import { parseLauncherArgs, WORLD_PATCHES } from '../src/args.mjs'

describe('dsh --world', () => {
  it('e2b adds the world-e2b patch layer, in flag order with --patch', () => {
    const args = parseLauncherArgs(['-p', '--patch', 'mine.yml', '--world', 'e2b', 'task'])
    expect(args.action).toBe('run')
    expect(args.patches).toEqual(['mine.yml', WORLD_PATCHES.e2b])
    expect(args.appArgs).toEqual(['-p', 'task'])
    expect(WORLD_PATCHES.e2b).toMatch(/bundles\/world-e2b\/cordis\.patch\.yml$/)
    expect(existsSync(WORLD_PATCHES.e2b)).toBe(true)
    expect(parseLauncherArgs(['--world=e2b']).patches).toEqual([WORLD_PATCHES.e2b])
  })

  it('local adds nothing', () => {
    expect(parseLauncherArgs(['--world', 'local', 'task']).patches).toEqual([])
  })

  it('a missing or unknown world is one line naming the known ones', () => {
    expect(parseLauncherArgs(['--world'])).toMatchObject({
      action: 'error',
      error: '--world needs a world name (local, e2b)',
    })
    expect(parseLauncherArgs(['--world', 'mars'])).toMatchObject({
      action: 'error',
      error: '--world: unknown world "mars" (known: local, e2b)',
    })
  })
})
