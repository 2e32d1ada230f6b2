// Safe git against a hostile repository: its config names a program (a script that records its
// name in a marker file) for every setting through which git starts one by itself. The same
// commands run through `runSafeGit` (over the real `@dsh/subprocess-local` provider) start none of
// them; plain git, as a positive control, starts them.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { execFileSync, spawnSync } from 'node:child_process'
import {
  chmodSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  realpathSync,
  rmSync,
  writeFileSync,
} from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Context } from 'cordis'
import { GIT_DRIVER_QUERY, gitDriverOverrides, runSafeGit, safeGitSpec, type SubprocessService } from '@dsh/subprocess'
import LocalSubprocessService from '../src/index.ts'

let base: string
let repo: string
let marker: string
let subprocess: SubprocessService
let fiber: { dispose(): unknown } | undefined

const IDENTITY = { GIT_AUTHOR_NAME: 't', GIT_AUTHOR_EMAIL: 't@t', GIT_COMMITTER_NAME: 't', GIT_COMMITTER_EMAIL: 't@t' }
const marks = () => (existsSync(marker) ? readFileSync(marker, 'utf8').split('\n').filter(Boolean) : [])

beforeAll(async () => {
  base = realpathSync(mkdtempSync(join(tmpdir(), 'dsh-safe-git-')))
  repo = join(base, 'repo')
  marker = join(base, 'marker')
  const evil = join(base, 'evil.sh')
  // Records who ran it; as a filter it passes the content through.
  writeFileSync(evil, `#!/bin/sh\necho "$1" >> '${marker}'\n[ "$1" = clean ] || [ "$1" = smudge ] && cat\nexit 0\n`)
  chmodSync(evil, 0o755)
  mkdirSync(repo)
  const plain = (...args: string[]) =>
    execFileSync('git', ['-C', repo, ...args], {
      encoding: 'utf8',
      env: { PATH: process.env.PATH, HOME: base, GIT_CONFIG_NOSYSTEM: '1', ...IDENTITY },
    })
  plain('init', '-q')
  writeFileSync(join(repo, 'a.txt'), 'one\n')
  writeFileSync(join(repo, 'b.pr'), 'two\n')
  writeFileSync(join(repo, '.gitattributes'), '*.txt diff=evil filter=evil\n*.pr filter=pr\n')
  plain('add', '-A')
  plain('commit', '-q', '-m', 'first')
  // Now the hostile part: every program-running setting, and a hook for every event.
  const run = (name: string) => `${evil} ${name}`
  writeFileSync(
    join(repo, '.git', 'config'),
    readFileSync(join(repo, '.git', 'config'), 'utf8') +
      [
        '[core]',
        `\tfsmonitor = ${run('fsmonitor')}`,
        `\tpager = ${run('pager')}`,
        `\tsshCommand = ${run('ssh')}`,
        `\taskPass = ${run('askpass')}`,
        `\teditor = ${run('editor')}`,
        '[diff]',
        `\texternal = ${run('external-diff')}`,
        '[diff "evil"]',
        `\ttextconv = ${run('textconv')}`,
        `\tcommand = ${run('diff-command')}`,
        '[filter "evil"]',
        `\tclean = ${run('clean')}`,
        `\tsmudge = ${run('smudge')}`,
        '\trequired = true',
        '[filter "pr"]',
        `\tprocess = ${run('process')}`,
        '[credential]',
        `\thelper = ${run('credential')}`,
        '[gpg]',
        `\tprogram = ${run('gpg')}`,
        '[commit]',
        '\tgpgSign = true',
        '[log]',
        '\tshowSignature = true',
        '[remote "origin"]',
        '\turl = ssh://git.invalid/x.git',
        '',
      ].join('\n'),
  )
  for (const hook of [
    'pre-commit',
    'commit-msg',
    'post-commit',
    'reference-transaction',
    'post-index-change',
    'post-checkout',
    'pre-auto-gc',
  ]) {
    writeFileSync(join(repo, '.git', 'hooks', hook), `#!/bin/sh\n${run(`hook-${hook}`)}\n`)
    chmodSync(join(repo, '.git', 'hooks', hook), 0o755)
  }
  const ctx = new Context()
  const loading = ctx.plugin(LocalSubprocessService, {} as never)
  fiber = loading
  await loading
  subprocess = ctx.subprocess
})

afterAll(async () => {
  await fiber?.dispose()
  rmSync(base, { recursive: true, force: true })
})

describe('safe git', () => {
  it('runs the everyday commands of a hostile repository without starting any program it configures', async () => {
    writeFileSync(join(repo, 'a.txt'), 'one\nchanged\n')
    const git = (...args: string[]) => runSafeGit(subprocess, args, { cwd: repo, env: IDENTITY })
    const status = await git('status', '--porcelain')
    expect(status.stderr).toBe('')
    expect(status.stdout).toBe(' M a.txt\n')
    expect((await git('diff')).stdout).toContain('+changed')
    expect((await git('diff', 'HEAD', '--stat')).code).toBe(0)
    expect((await git('blame', 'a.txt')).code).toBe(0)
    expect((await git('rev-parse', '--show-toplevel')).stdout.trim()).toBe(repo)
    expect((await git('ls-files')).stdout).toBe('.gitattributes\na.txt\nb.pr\n')
    const add = await git('add', '-A')
    expect(add.code, add.stderr).toBe(0)
    const commit = await git('commit', '-q', '-m', 'second')
    expect(commit.code, commit.stderr).toBe(0)
    expect((await git('log', '-p', '-2')).stdout).toContain('second')
    expect((await git('show', 'HEAD')).stdout).toContain('+changed')
    const checkout = await git('checkout', 'HEAD~1', '--', 'a.txt')
    expect(checkout.code, checkout.stderr).toBe(0)
    expect(readFileSync(join(repo, 'a.txt'), 'utf8')).toBe('one\n')
    // Network transports are refused before any ssh command or credential helper runs.
    const fetch = await git('fetch', 'origin')
    expect(fetch.code).not.toBe(0)
    expect(fetch.stderr).toMatch(/transport 'ssh' not allowed/)
    expect((await git('ls-remote', 'https://git.invalid/x.git')).code).not.toBe(0)
    expect(marks()).toEqual([])

    // Positive control: plain git in the same repository starts them.
    spawnSync('git', ['-C', repo, 'status'], { env: { PATH: process.env.PATH, HOME: base } })
    spawnSync('git', ['-C', repo, 'diff', 'HEAD~1', 'HEAD'], { env: { PATH: process.env.PATH, HOME: base } })
    // (The process filter, which hangs up at once, would end the commit before its hooks.)
    spawnSync('git', ['-C', repo, '-c', 'filter.pr.process=', 'commit', '--allow-empty', '-m', 'x'], {
      env: { PATH: process.env.PATH, HOME: base, ...IDENTITY },
    })
    const started = marks()
    // (Only the ones that run every time: whether status runs a clean filter depends on timestamps.)
    for (const name of ['fsmonitor', 'diff-command', 'hook-pre-commit']) expect(started).toContain(name)
  })

  it('lists the repository drivers once and disables them by name, = in a name included', async () => {
    const query = await runSafeGit(subprocess, [...GIT_DRIVER_QUERY], { cwd: repo })
    const pairs = gitDriverOverrides(query.stdout)
    expect(pairs).toEqual(
      expect.arrayContaining([
        ['filter.evil.clean', ''],
        ['filter.evil.smudge', ''],
        ['filter.evil.required', 'false'],
        ['filter.pr.process', ''],
        ['diff.evil.textconv', ''],
        ['diff.evil.command', ''],
      ]),
    )
    expect(gitDriverOverrides('filter.a=b.clean\0filter.a=b.clean\0')).toEqual([['filter.a=b.clean', '']])
    const spec = safeGitSpec(['diff'], { cwd: repo, driverOverrides: [['filter.a=b.clean', '']] })
    expect(spec.env?.set).toMatchObject({
      GIT_CONFIG_COUNT: '1',
      GIT_CONFIG_KEY_0: 'filter.a=b.clean',
      GIT_CONFIG_VALUE_0: '',
      GIT_CONFIG_NOSYSTEM: '1',
      GIT_TERMINAL_PROMPT: '0',
    })
    expect(spec.args).toEqual(
      expect.arrayContaining([
        '--no-pager',
        '-c',
        'core.fsmonitor=false',
        '-c',
        'core.hooksPath=/dev/null',
        'diff',
        '--no-ext-diff',
        '--no-textconv',
      ]),
    )
    // A caller's variables cannot switch the safe ones off.
    expect(
      safeGitSpec(['status'], { cwd: repo, env: { GIT_PAGER: 'less', GIT_TERMINAL_PROMPT: '1' } }).env?.set,
    ).toMatchObject({ GIT_PAGER: 'cat', GIT_TERMINAL_PROMPT: '0' })
    expect(() => safeGitSpec([], { cwd: repo })).toThrow(/non-empty array/)
  })
})

describe('every git call of dsh goes through safe git', () => {
  it('no package source starts git on its own', async () => {
    const { readdirSync, statSync } = await import('node:fs')
    const root = join(import.meta.dirname, '..', '..', '..', '..')
    const offenders: string[] = []
    // A literal 'git' as the program of a spawn, execFile, spawn spec or argv (the shapes dsh uses).
    const pattern =
      /(?:spawn|spawnSync|execFile|execFileSync|nativeSpawn)\(\s*['"`]git['"`]|file:\s*['"`]git['"`]|\[\s*['"`]git['"`]\s*,/
    const walk = (dir: string) => {
      for (const name of readdirSync(dir)) {
        if (name === 'node_modules' || name === 'dist' || name === 'test') continue
        const path = join(dir, name)
        if (statSync(path).isDirectory()) walk(path)
        else if (/\.(ts|tsx|mts|mjs|js)$/.test(name) && pattern.test(readFileSync(path, 'utf8')))
          offenders.push(path.slice(root.length + 1))
      }
    }
    for (const top of ['packages', 'bundles']) walk(join(root, top))
    expect(offenders.filter((path) => path !== join('packages', 'subprocess', 'subprocess', 'src', 'git.ts'))).toEqual(
      [],
    )
  })
})
