import { chmodSync, existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { browserSkipReason, displayUrl, isEarlyStatic, openBrowser, parseWebArgs, UsageError } from '../src/startup.ts'

describe('dsh web flags', () => {
  it('parses host, port, --no-open and repeated --trusted-host', () => {
    expect(parseWebArgs([])).toEqual({ open: true, trustedHosts: [], help: false })
    expect(
      parseWebArgs([
        '--host',
        '0.0.0.0',
        '--port=0',
        '--no-open',
        '--trusted-host',
        'a.lan',
        '--trusted-host=b.lan:8443',
      ]),
    ).toEqual({
      host: '0.0.0.0',
      port: 0,
      open: false,
      trustedHosts: ['a.lan', 'b.lan:8443'],
      help: false,
    })
    expect(parseWebArgs(['--host', '[::1]']).host).toBe('::1')
    expect(parseWebArgs(['-h']).help).toBe(true)
    expect(parseWebArgs(['--port', 'x', '--help']).help).toBe(true)
  })

  it('refuses bad input with one line naming the flag', () => {
    const cases: [string[], string][] = [
      [['--port', 'abc'], "--port must be a number from 0 to 65535, not 'abc'"],
      [['--port', '70000'], "--port must be a number from 0 to 65535, not '70000'"],
      [['--port', '-1'], "--port: write a value starting with '-' as --port=VALUE"],
      [['--port=-1'], "--port must be a number from 0 to 65535, not '-1'"],
      [['--port'], '--port needs a value'],
      [['--bogus'], 'unknown option --bogus'],
      [['serve'], "unexpected argument 'serve' (dsh web takes only options)"],
      [['--host', ''], "--host must be an address or host name, not ''"],
      [['--trusted-host', 'http://x/'], "--trusted-host must be a host name, not 'http://x/'"],
    ]
    for (const [argv, message] of cases) {
      let error: unknown
      try {
        parseWebArgs(argv)
      } catch (e) {
        error = e
      }
      expect(error, argv.join(' ')).toBeInstanceOf(UsageError)
      expect((error as Error).message, argv.join(' ')).toBe(message)
      expect((error as Error).message).not.toContain('\n')
    }
  })

  it('skips the browser for --no-open, SSH sessions and a Linux without display', () => {
    expect(browserSkipReason({ DISPLAY: ':0' }, 'linux', true)).toBeUndefined()
    expect(browserSkipReason({ WAYLAND_DISPLAY: 'wayland-0' }, 'linux', true)).toBeUndefined()
    expect(browserSkipReason({ DISPLAY: ':0' }, 'linux', false)).toBe('--no-open')
    expect(browserSkipReason({ DISPLAY: ':0', SSH_CONNECTION: '1 2 3 4' }, 'linux', true)).toBe('an SSH session')
    expect(browserSkipReason({ SSH_TTY: '/dev/pts/1' }, 'darwin', true)).toBe('an SSH session')
    expect(browserSkipReason({}, 'linux', true)).toBe('no display')
    expect(browserSkipReason({}, 'darwin', true)).toBeUndefined()
    expect(browserSkipReason({}, 'win32', true)).toBeUndefined()
  })

  it('shows wildcard binds as loopback URLs', () => {
    expect(displayUrl('127.0.0.1', 3080)).toBe('http://127.0.0.1:3080/')
    expect(displayUrl('0.0.0.0', 1)).toBe('http://127.0.0.1:1/')
    expect(displayUrl('::', 1)).toBe('http://[::1]:1/')
    expect(displayUrl('::1', 1)).toBe('http://[::1]:1/')
  })

  it('opens the URL with xdg-open, detached; a missing opener is ignored', async () => {
    const bin = mkdtempSync(join(tmpdir(), 'dsh-open-'))
    const seen = join(bin, 'seen.txt')
    writeFileSync(join(bin, 'xdg-open'), `#!/bin/sh\nprintf '%s' "$1" > '${seen}.tmp' && mv '${seen}.tmp' '${seen}'\n`)
    chmodSync(join(bin, 'xdg-open'), 0o755)
    const path = process.env.PATH
    try {
      process.env.PATH = `${bin}:${path}`
      openBrowser('http://127.0.0.1:9/', 'linux')
      process.env.PATH = bin + '/none'
      expect(() => openBrowser('http://127.0.0.1:9/', 'linux')).not.toThrow()
    } finally {
      process.env.PATH = path
    }
    while (!existsSync(seen)) await new Promise((r) => setTimeout(r, 20))
    expect(readFileSync(seen, 'utf8')).toBe('http://127.0.0.1:9/')
  })

  it('serves only GET/HEAD of unrouted paths outside /api, /plugins and /auth before app/ready', () => {
    const at = (path: string) => ({ url: new URL(path, 'http://127.0.0.1:1') })
    expect(isEarlyStatic({ method: 'GET' }, at('/'), undefined)).toBe(true)
    expect(isEarlyStatic({ method: 'HEAD' }, at('/assets/app-1a2b.js'), undefined)).toBe(true)
    expect(isEarlyStatic({ method: 'GET' }, at('/apix'), undefined)).toBe(true)
    expect(isEarlyStatic({ method: 'POST' }, at('/'), undefined)).toBe(false)
    expect(isEarlyStatic({ method: 'GET' }, at('/api/events/host'), undefined)).toBe(false)
    expect(isEarlyStatic({ method: 'GET' }, at('/api'), undefined)).toBe(false)
    expect(isEarlyStatic({ method: 'GET' }, at('/plugins/@acme/ui/index.js'), undefined)).toBe(false)
    expect(isEarlyStatic({ method: 'GET' }, at('/auth/login'), undefined)).toBe(false)
    expect(isEarlyStatic({ method: 'GET' }, at('/x'), { path: '/x' })).toBe(false)
  })
})
