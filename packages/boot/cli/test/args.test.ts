import { describe, expect, it } from 'vitest'
import { DEFAULT_PROFILE, PRINT_PROFILE, SUBCOMMAND_BINS, parseLauncherArgs } from '../src/index.ts'
import { SESSIONS_PATCH } from '../src/args.mjs'

describe('parseLauncherArgs', () => {
  it('`dsh sessions` adds the sessions layer to the one-shot profile and passes the rest through', () => {
    const args = parseLauncherArgs(['sessions', 'show', 'abc', '--output-format', 'json'])
    expect(args).toMatchObject({
      action: 'run',
      profile: 'headless',
      appArgs: ['show', 'abc', '--output-format', 'json'],
    })
    expect(args.patches).toEqual([SESSIONS_PATCH])
  })

  it('takes launcher flags before or after the task and hands the rest to the app in order', () => {
    expect(
      parseLauncherArgs(['--profile', 'headless', '--patch', 'a.yml', '--patch=b.yml', 'fix it', '--patch', 'c']),
    ).toMatchObject({
      action: 'run',
      profile: 'headless',
      profileGiven: true,
      patches: ['a.yml', 'b.yml', 'c'],
      appArgs: ['fix it'],
    })
    expect(parseLauncherArgs(['--profile=web', '--', '--dump-config']).appArgs).toEqual(['--dump-config'])
    expect(parseLauncherArgs(['--port=1', '--profile', 'x'])).toMatchObject({ profile: 'x', appArgs: ['--port=1'] })
    expect(parseLauncherArgs(['-p', 'fix it', '--model', 'm', '--profile', 'p', '--dump-config'])).toMatchObject({
      profile: 'p',
      dumpConfig: true,
      appArgs: ['-p', 'fix it', '--model', 'm'],
    })
    // After `--` nothing is read: the app gets the rest, with the `--` when it follows app arguments.
    expect(parseLauncherArgs(['fix', '--', '--profile', 'x'])).toMatchObject({
      profile: DEFAULT_PROFILE,
      appArgs: ['fix', '--', '--profile', 'x'],
    })
  })

  it('-p/--print selects the one-shot profile unless --profile says otherwise', () => {
    expect(parseLauncherArgs(['-p', 'task'])).toMatchObject({
      action: 'run',
      profile: PRINT_PROFILE,
      appArgs: ['-p', 'task'],
    })
    expect(parseLauncherArgs(['task', '--print'])).toMatchObject({
      profile: PRINT_PROFILE,
      appArgs: ['task', '--print'],
    })
    expect(parseLauncherArgs(['--profile', 'mine', '-p', 'task'])).toMatchObject({ profile: 'mine' })
  })

  it('acp and jsonrpc in first position run those bins with the rest of the arguments', () => {
    expect(parseLauncherArgs(['acp', '--patch', 'x.yml'])).toMatchObject({
      action: 'subcommand',
      subcommand: 'acp',
      appArgs: ['--patch', 'x.yml'],
    })
    expect(parseLauncherArgs(['jsonrpc'])).toMatchObject({ action: 'subcommand', subcommand: 'jsonrpc', appArgs: [] })
    expect(parseLauncherArgs(['-p', 'acp'])).toMatchObject({ action: 'run', appArgs: ['-p', 'acp'] })
    expect(SUBCOMMAND_BINS.acp.url.pathname).toMatch(/acp-app\/bin\/dsh-acp\.mjs$/)
    expect(SUBCOMMAND_BINS.jsonrpc.url.pathname).toMatch(/sdk\/server\/bin\/dsh-jsonrpc-agent\.mjs$/)
  })

  it('--help and --version after an app argument go to the app', () => {
    expect(parseLauncherArgs(['task', '--help'])).toMatchObject({ action: 'run', appArgs: ['task', '--help'] })
    expect(parseLauncherArgs(['-p', '--version'])).toMatchObject({ action: 'run', appArgs: ['-p', '--version'] })
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
    expect(parseLauncherArgs(['--profile'])).toMatchObject({
      action: 'error',
      error: '--profile needs a profile name, e.g. --profile headless',
    })
    expect(parseLauncherArgs(['--patch', '--dump-config'])).toMatchObject({ action: 'error' })
    expect(parseLauncherArgs(['--profile', 'a', '--profile', 'b'])).toMatchObject({
      action: 'error',
      error: '--profile given twice (a, b)',
    })
  })
})
