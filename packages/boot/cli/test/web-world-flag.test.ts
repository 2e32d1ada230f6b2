// `dsh web --world NAME`: the web host takes the per-workspace layers of @dsh/bundle-web-worlds
// (NAME is the default world of folders that chose none) in place of the world's own layer, in the
// flag's position; an unknown name is the same one-line error as on every bin.
import { existsSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import { parseLauncherArgs, WEB_WORLD_PATCHES, WORLD_PATCHES } from '../src/args.mjs'

describe('dsh web --world', () => {
  it('takes the per-workspace layers, e2b as the default with --world e2b', () => {
    const e2b = parseLauncherArgs(['web', '--patch', 'mine.yml', '--world', 'e2b', '--patch', 'last.yml'])
    expect(e2b).toMatchObject({ action: 'run', profile: 'web' })
    expect(e2b.patches).toEqual(['mine.yml', ...WEB_WORLD_PATCHES.e2b, 'last.yml'])
    expect(e2b.patches).not.toContain(WORLD_PATCHES.e2b)
    expect(WEB_WORLD_PATCHES.e2b.map((p) => p.replace(/.*\/bundles\//, ''))).toEqual([
      'web-worlds/cordis.patch.yml',
      'web-worlds/e2b.patch.yml',
    ])
    for (const file of WEB_WORLD_PATCHES.e2b) expect(existsSync(file)).toBe(true)
    expect(parseLauncherArgs(['web', '--world=local']).patches).toEqual(WEB_WORLD_PATCHES.local)
    // The flag may come before the subcommand word.
    expect(parseLauncherArgs(['--world', 'e2b', 'web']).patches).toEqual(WEB_WORLD_PATCHES.e2b)
  })

  it('leaves plain dsh web and other surfaces as they were', () => {
    expect(parseLauncherArgs(['web']).patches).toEqual([])
    expect(parseLauncherArgs(['-p', '--world', 'e2b', 'task']).patches).toEqual([WORLD_PATCHES.e2b])
  })

  it('refuses an unknown world in one line', () => {
    expect(parseLauncherArgs(['web', '--world', 'mars'])).toMatchObject({
      action: 'error',
      error: '--world: unknown world "mars" (known: local, e2b)',
    })
  })
})
