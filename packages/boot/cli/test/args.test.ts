import { describe, expect, it } from 'vitest'
import { DEFAULT_PROFILE, parseLauncherArgs } from '../src/index.ts'

describe('parseLauncherArgs', () => {
  it('takes launcher flags first and hands the rest to the app', () => {
    expect(parseLauncherArgs(['--profile', 'headless', '--patch', 'a.yml', '--patch=b.yml', 'fix it', '--patch', 'c'])).toMatchObject({
      action: 'run', profile: 'headless', profileGiven: true, patches: ['a.yml', 'b.yml'], appArgs: ['fix it', '--patch', 'c'],
    })
    expect(parseLauncherArgs(['--profile=web', '--', '--dump-config']).appArgs).toEqual(['--dump-config'])
    expect(parseLauncherArgs(['--port=1', '--profile', 'x'])).toMatchObject({ profile: DEFAULT_PROFILE, appArgs: ['--port=1', '--profile', 'x'] })
  })

  it('treats `web` as --profile web only in launcher position', () => {
    expect(parseLauncherArgs(['web', '--port=8080'])).toMatchObject({ profile: 'web', appArgs: ['--port=8080'] })
    expect(parseLauncherArgs(['--profile', 'headless', 'web'])).toMatchObject({ profile: 'headless', appArgs: ['web'] })
  })

  it('answers --help itself unless a profile was chosen, which gets the help request instead', () => {
    expect(parseLauncherArgs(['--help']).action).toBe('help')
    expect(parseLauncherArgs(['-h']).action).toBe('help')
    expect(parseLauncherArgs(['--profile', 'web', '--help'])).toMatchObject({ action: 'run', appArgs: ['--help'] })
    expect(parseLauncherArgs(['web', '--help'])).toMatchObject({ action: 'run', profile: 'web', appArgs: ['--help'] })
    expect(parseLauncherArgs(['--version']).action).toBe('version')
    expect(parseLauncherArgs(['--dump-config']).dumpConfig).toBe(true)
  })

  it('reports a flag without its value as a usage error', () => {
    expect(parseLauncherArgs(['--profile'])).toMatchObject({ action: 'error', error: '--profile needs a profile name, e.g. --profile headless' })
    expect(parseLauncherArgs(['--patch', '--dump-config'])).toMatchObject({ action: 'error' })
    expect(parseLauncherArgs(['--profile', 'a', '--profile', 'b'])).toMatchObject({ action: 'error', error: '--profile given twice (a, b)' })
  })
})
