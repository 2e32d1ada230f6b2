// Spawns the real `dsh` bin as a subprocess with a temporary DSH_HOME.
import { describe, expect, it } from 'vitest'
import { spawn, spawnSync } from 'node:child_process'
import { existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { parse as parseYaml } from 'yaml'

const BIN = fileURLToPath(new URL('../bin/dsh.mjs', import.meta.url))
const FIXTURES = fileURLToPath(new URL('../../app-boot/test/fixtures/', import.meta.url))
const VERSION = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')).version

function dsh(args: string[], opts: { home?: string; cwd?: string } = {}) {
  const home = opts.home ?? mkdtempSync(join(tmpdir(), 'dsh-cli-'))
  const env: NodeJS.ProcessEnv = { ...process.env, DSH_HOME: home }
  delete env.DSH_DEBUG
  const r = spawnSync(process.execPath, [BIN, ...args], {
    env,
    cwd: opts.cwd ?? home,
    encoding: 'utf8',
    timeout: 30_000,
  })
  return { code: r.status, stdout: r.stdout, stderr: r.stderr, home }
}

function expectOneLine(stderr: string, pattern: RegExp) {
  const lines = stderr.trimEnd().split('\n')
  expect(lines).toHaveLength(1)
  expect(lines[0]).toMatch(pattern)
  expect(stderr).not.toMatch(/^\s+at /m)
}

function profile(home: string, name: string, bundles: string[], patch?: string) {
  const dir = join(home, 'profiles', name)
  mkdirSync(dir, { recursive: true })
  writeFileSync(join(dir, 'package.json'), JSON.stringify({ dsh: { profile: { bundles } } }))
  if (patch) writeFileSync(join(dir, 'cordis.patch.yml'), patch)
  return dir
}

describe('dsh launcher', () => {
  it('prints help and version without booting', () => {
    const help = dsh(['--help'])
    expect(help.code).toBe(0)
    expect(help.stdout).toMatch(/^dsh \d+\.\d+\.\d+ /)
    expect(help.stdout).toContain('--profile NAME')
    expect(dsh(['--version']).stdout).toBe(`dsh ${VERSION}\n`)
  })

  it('rejects an unknown profile with exit 2 and one line', () => {
    const r = dsh(['--profile', 'nope'])
    expect(r.code).toBe(2)
    expectOneLine(r.stderr, /^dsh: unknown profile "nope": .*known: acp, headless, tui, web/)
  })

  it('rejects a launcher flag missing its value with exit 2', () => {
    const r = dsh(['--patch'])
    expect(r.code).toBe(2)
    expect(r.stderr).toMatch(/^dsh: --patch needs a file/)
  })

  it('creates the headless profile on first use and boots it', () => {
    // With an extra layer, `--help` after the profile is the app's help: the whole tree boots to
    // answer it (the layer could add rows the fixed text cannot know).
    const home = mkdtempSync(join(tmpdir(), 'dsh-cli-'))
    const layer = join(home, 'empty.patch.yml')
    writeFileSync(layer, '[]\n')
    const r = dsh(['--profile', 'headless', '--patch', layer, '--help'], { home })
    expect(r.stderr).toBe('')
    expect(r.code).toBe(0)
    expect(r.stdout).toContain('Usage: dsh -p "task"')
    expect(readFileSync(join(r.home, 'profiles', 'headless', 'package.json'), 'utf8')).toContain('@dsh/bundle-headless')
  })

  it("answers the one-shot profile's help without a boot (no profile is even created)", () => {
    for (const args of [
      ['-p', '--help'],
      ['--profile', 'headless', '-h'],
      ['--print', '--help'],
    ]) {
      const r = dsh(args)
      expect(r, args.join(' ')).toMatchObject({ code: 0, stderr: '' })
      expect(r.stdout).toContain('Usage: dsh -p "task"')
      expect(r.stdout).toContain('--patch FILE')
      expect(existsSync(join(r.home, 'profiles'))).toBe(false)
    }
  })

  it('--dump-config output fed back as the only layer composes and boots the same rows', () => {
    const first = dsh(['--profile', 'headless', '--dump-config'])
    expect(first.code).toBe(0)
    expect(first.stdout).toMatch(/^# == bundle @dsh\/bundle-base$/m)
    const home = first.home
    profile(home, 'empty', [])
    const dumpFile = join(home, 'dump.yml')
    writeFileSync(dumpFile, first.stdout)
    const second = dsh(['--profile', 'empty', '--patch', dumpFile, '--dump-config'], { home })
    expect(second.code).toBe(0)
    // Same rows in the same order; the grouping into runs follows the layers, which differ.
    const rows = (s: string) => (parseYaml(s) as { insert: unknown[] }[]).flatMap((op) => op.insert)
    expect(rows(second.stdout)).toEqual(rows(first.stdout))
    const boot = dsh(['--profile', 'empty', '--patch', dumpFile, '--help'], { home })
    expect(boot.stderr).toBe('')
    expect(boot.code).toBe(0)
  })

  it('fails loud on a config that fails the plugin schema: one line naming row and field', () => {
    const home = mkdtempSync(join(tmpdir(), 'dsh-cli-'))
    writeFileSync(
      join(home, 'bad.yml'),
      `- insert:\n    - { id: counter, name: ${join(FIXTURES, 'counter.ts')}, config: { start: lots } }\n`,
    )
    const r = dsh(['--patch', 'bad.yml'], { home })
    expect(r.code).toBe(1)
    expectOneLine(
      r.stderr,
      /^dsh: boot failed: row counter \(.*counter\.ts\): .*bad\.yml:2: invalid config: field config\.start: expected number but got lots$/,
    )
  })

  it('fails loud on a malformed layer, an unresolvable name and a non-bundle package', () => {
    const home = mkdtempSync(join(tmpdir(), 'dsh-cli-'))
    writeFileSync(join(home, 'broken.yml'), '- insert:\n    - id: a\n      name: [not, a, string]\n')
    let r = dsh(['--patch', 'broken.yml'], { home })
    expect(r.code).toBe(1)
    expectOneLine(r.stderr, /^dsh: .*broken\.yml:3: \[0\]\.insert\[0\]\.name: must be a non-empty string/)

    writeFileSync(join(home, 'ghost.yml'), '- insert:\n    - { id: ghost, name: "@dsh/no-such-plugin" }\n')
    r = dsh(['--patch', 'ghost.yml'], { home })
    expect(r.code).toBe(1)
    expectOneLine(
      r.stderr,
      /^dsh: boot failed: row ghost \(@dsh\/no-such-plugin\): cannot resolve module "@dsh\/no-such-plugin" from .*ghost\.yml or the dsh installation$/,
    )

    profile(home, 'odd', [join(FIXTURES, 'no-dsh-field')])
    r = dsh(['--profile', 'odd'], { home })
    expect(r.code).toBe(1)
    expectOneLine(r.stderr, /^dsh: .*no-dsh-field\/package\.json: field "dsh\.bundle\.patch" is missing/)
  })

  it('warns, naming the layer, when a patch names an unknown row id, and still boots', () => {
    const home = mkdtempSync(join(tmpdir(), 'dsh-cli-'))
    writeFileSync(join(home, 'cordis.patch.yml'), '- id: no-such-row\n  disabled: true\n')
    const r = dsh(['--profile', 'headless', '--list-sessions'], { home })
    expect(r.code).toBe(0)
    const [warning, ...rest] = r.stderr.trimEnd().split('\n')
    expect(warning).toMatch(
      /^dsh: warning: home \(.*cordis\.patch\.yml:1\): \[0\] id "no-such-row" names no row; skipped$/,
    )
    // The booted app then ran: it reports that there is nothing stored yet.
    expect(rest).toEqual([expect.stringMatching(/^dsh: no stored sessions for /)])
  })

  it('passes app arguments (including --help after --profile) to ctx.cmdlineArgs', () => {
    const home = mkdtempSync(join(tmpdir(), 'dsh-cli-'))
    const probe = join(home, 'probe.mjs')
    writeFileSync(
      probe,
      `export const inject = ['cmdlineArgs']\nexport function apply(ctx) { process.stdout.write(JSON.stringify(ctx.cmdlineArgs.argv) + '\\n') }\n`,
    )
    writeFileSync(
      join(home, 'probe.yml'),
      `- insert:\n    - { id: probe, name: ./probe.mjs }\n- id: headless-runner\n  disabled: true\n`,
    )
    const r = dsh(['--profile', 'headless', '--patch', 'probe.yml', '--help', 'x'], { home })
    expect(r.stderr).toBe('')
    expect(r.stdout).toBe('["--help","x"]\n')
  })

  it('disposes the tree and exits on SIGINT and SIGTERM', async () => {
    for (const [signal, code] of [
      ['SIGINT', 130],
      ['SIGTERM', 143],
    ] as const) {
      const home = mkdtempSync(join(tmpdir(), 'dsh-cli-'))
      writeFileSync(
        join(home, 'server.mjs'),
        `export function apply(ctx) {
  ctx.effect(() => {
    const timer = setInterval(() => {}, 1000)
    process.stdout.write('ready\\n')
    return () => { clearInterval(timer); process.stdout.write('disposed\\n') }
  })
}
`,
      )
      writeFileSync(join(home, 'server.yml'), '- insert:\n    - { id: server, name: ./server.mjs }\n')
      // stdin stays an open pipe: the one-shot waits on it for its task when the signal comes.
      const child = spawn(process.execPath, [BIN, '--patch', 'server.yml'], {
        cwd: home,
        env: { ...process.env, DSH_HOME: home, DSH_DEBUG: '1' },
      })
      let out = ''
      let err = ''
      child.stderr.on('data', (d) => (err += d))
      await new Promise<void>((resolve) =>
        child.stdout.on('data', (d) => {
          out += d
          if (out.includes('ready')) resolve()
        }),
      )
      child.kill(signal)
      const status = await new Promise<number | null>((resolve) => child.on('exit', (c) => resolve(c)))
      expect(status).toBe(code)
      expect(out).toBe('ready\ndisposed\n')
      // The process ended because nothing was left open (the stdin read was abandoned), not by
      // the launcher's forced exit; and a stop is not reported as a missing task.
      expect(err).not.toMatch(/forced exit/)
      expect(err).not.toMatch(/no task given/)
    }
  })
})
