// harnessReadRefusal: may the harness read a path for the model? Tested here on its own (the file,
// search and context packages test it through their tools), because mutation testing
// (`pnpm mutation sandbox-policy`) found no test of this package reaching it at all.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { mkdirSync, mkdtempSync, openSync, closeSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { SandboxPolicy } from '@dsh/sandbox'
import { harnessReadRefusal, isProcessEntry, openedPath, realLocation } from '../src/index.ts'

let base: string
let ws: string
let home: string
let outside: string
let policy: SandboxPolicy

beforeAll(() => {
  base = realpathSync(mkdtempSync(join(tmpdir(), 'dsh-harness-read-')))
  ws = join(base, 'ws')
  home = join(base, 'home')
  outside = join(base, 'outside')
  for (const dir of [ws, home, outside]) mkdirSync(dir)
  writeFileSync(join(home, '.credentials.yaml'), 'K: v\n')
  writeFileSync(join(ws, 'notes.md'), 'hello\n')
  writeFileSync(join(outside, 'other.md'), 'elsewhere\n')
  policy = {
    mode: 'workspace-write',
    workspaceRoot: ws,
    writableRoots: [ws],
    network: false,
    readOnlyPaths: [home],
    hiddenPaths: [join(home, '.credentials.yaml'), join(home, '.env')],
    controlPaths: [],
  }
})
afterAll(() => rmSync(base, { recursive: true, force: true }))

describe('harnessReadRefusal', () => {
  it('refuses a hidden credential file in a confining mode, and allows it only without confinement', () => {
    const file = join(home, '.credentials.yaml')
    expect(harnessReadRefusal(file, policy)).toBe(
      `it is under ${file}, dsh's credentials, which are not readable in workspace-write mode`,
    )
    expect(harnessReadRefusal(file, { ...policy, mode: 'read-only' })).toMatch(/not readable in read-only mode$/)
    expect(harnessReadRefusal(file, { ...policy, mode: 'danger-full-access' })).toBeUndefined()
    expect(harnessReadRefusal(file, undefined)).toBeUndefined()
    // An ordinary file, and a file whose name merely starts like a hidden one, are readable.
    expect(harnessReadRefusal(join(ws, 'notes.md'), policy)).toBeUndefined()
    writeFileSync(join(home, '.credentials.yaml.bak'), 'x')
    expect(harnessReadRefusal(join(home, '.credentials.yaml.bak'), policy)).toBeUndefined()
    // A policy without hidden paths hides nothing.
    expect(harnessReadRefusal(file, { ...policy, hiddenPaths: undefined })).toBeUndefined()
  })

  it('follows a symlink chain: a link in the workspace to a hidden file is refused, naming where it leads', () => {
    const hop2 = join(ws, 'hop2')
    symlinkSync(join(home, '.credentials.yaml'), hop2)
    symlinkSync('hop2', join(ws, 'hop1'))
    const refusal = harnessReadRefusal(join(ws, 'hop1'), policy)
    expect(refusal).toBe(
      `it leads to ${join(home, '.credentials.yaml')}, which is under ${join(home, '.credentials.yaml')}, dsh's credentials, which are not readable in workspace-write mode`,
    )
    // A hidden path that does not exist yet is refused through a dangling link too.
    symlinkSync(join(home, '.env'), join(ws, 'env-link'))
    expect(harnessReadRefusal(join(ws, 'env-link'), policy)).toMatch(/^it leads to .*\/home\/\.env, which is under/)
  })

  it('resolves each relative hop against the directory of its link: a credential file that is itself a link is still refused', () => {
    // A dotfile manager's layout: the hidden file is a link to where the secret really lives, and
    // the workspace reaches it through a relative link. The real path (the secret's) is not a
    // hidden path; only the hop through the credential file's own name is.
    const store = join(outside, 'dotfiles', 'deep')
    mkdirSync(store, { recursive: true })
    writeFileSync(join(store, 'env'), 'SECRET=1\n')
    const linkedHome = join(base, 'linked-home')
    mkdirSync(linkedHome)
    symlinkSync(join(store, 'env'), join(linkedHome, '.env'))
    symlinkSync('../linked-home/.env', join(ws, 'dot-env'))
    const linked = { ...policy, hiddenPaths: [join(linkedHome, '.env')] }
    expect(harnessReadRefusal(join(ws, 'dot-env'), linked)).toBe(
      `it leads to ${join(linkedHome, '.env')}, which is under ${join(linkedHome, '.env')}, dsh's credentials, which are not readable in workspace-write mode`,
    )
    // Positive control: the secret's real file itself is not a hidden path under this policy.
    expect(harnessReadRefusal(join(store, 'env'), linked)).toBeUndefined()
  })

  it('refuses per-process /proc entries and the /dev/fd aliases, by name, in a confining mode', () => {
    for (const path of [
      '/proc/self/environ',
      '/proc/thread-self/cmdline',
      `/proc/${process.pid}/mem`,
      '/proc/1',
      '/dev/fd/0',
      '/dev/stdin',
      '/dev/stdout',
      '/dev/stderr',
    ]) {
      const refusal = harnessReadRefusal(path, policy)
      expect(refusal, path).toMatch(
        /a per-process \/proc entry \(a process's environment, memory, command line or open files, dsh's own included\), which is not readable in workspace-write mode; commands run in the sandbox see only their own processes there$/,
      )
    }
    expect(harnessReadRefusal('/proc/self/environ', { ...policy, mode: 'danger-full-access' })).toBeUndefined()
    // System-wide /proc files are not per-process.
    expect(harnessReadRefusal('/proc/cpuinfo', policy)).toBeUndefined()
    expect(harnessReadRefusal('/proc/selfish', policy)).toBeUndefined()
    // A link in the workspace to dsh's environment is refused through the link.
    symlinkSync('/proc/self/environ', join(ws, 'env-of-dsh'))
    expect(harnessReadRefusal(join(ws, 'env-of-dsh'), policy)).toMatch(
      /^it leads to \/proc\/(?:self|\d+)\/environ, which is a per-process \/proc entry/,
    )
  })

  it('with roots, refuses a real path outside them in every mode, and a link whose target cannot be resolved', () => {
    symlinkSync(join(outside, 'other.md'), join(ws, 'to-outside'))
    const full = { ...policy, mode: 'danger-full-access' as const }
    expect(harnessReadRefusal(join(ws, 'notes.md'), full, { roots: [ws] })).toBeUndefined()
    expect(harnessReadRefusal(join(ws, 'to-outside'), full, { roots: [ws] })).toBe(
      `it resolves to ${join(outside, 'other.md')}, outside ${ws}, and only files there are read`,
    )
    expect(harnessReadRefusal(join(ws, 'to-outside'), full, { roots: [ws, outside] })).toBeUndefined()
    // A sibling directory sharing the root's name as a prefix is outside it.
    mkdirSync(join(base, 'ws-sibling'))
    writeFileSync(join(base, 'ws-sibling', 'f'), 'x')
    expect(harnessReadRefusal(join(base, 'ws-sibling', 'f'), full, { roots: [ws] })).toMatch(
      /^it resolves to .*ws-sibling\/f, outside/,
    )
    // A root given through a symlink is resolved.
    symlinkSync(ws, join(base, 'ws-link'))
    expect(harnessReadRefusal(join(ws, 'notes.md'), full, { roots: [join(base, 'ws-link')] })).toBeUndefined()
    // A parent component that is a dangling link makes the real location unknowable.
    symlinkSync(join(base, 'gone'), join(ws, 'gone-dir'))
    expect(harnessReadRefusal(join(ws, 'gone-dir', 'x.md'), full, { roots: [ws] })).toBe(
      `it is a link whose target cannot be resolved, and only files under ${ws} are read`,
    )
  })

  it('checks what was really opened, and takes it as the real path for roots', () => {
    const full = { ...policy, mode: 'danger-full-access' as const }
    expect(harnessReadRefusal(join(ws, 'notes.md'), full, { roots: [ws], opened: join(outside, 'other.md') })).toMatch(
      /^it resolves to .*outside\/other\.md, outside/,
    )
    expect(harnessReadRefusal(join(ws, 'notes.md'), policy, { opened: join(home, '.credentials.yaml') })).toMatch(
      /^it leads to .*\.credentials\.yaml, which is under/,
    )
    const fd = openSync(join(ws, 'notes.md'), 'r')
    try {
      expect(openedPath(fd)).toBe(join(ws, 'notes.md'))
    } finally {
      closeSync(fd)
    }
    expect(openedPath(987654)).toBeUndefined()
  })
})

describe('realLocation and isProcessEntry', () => {
  it('resolves the existing prefix and keeps the missing tail', () => {
    symlinkSync(ws, join(base, 'ws-alias'))
    expect(realLocation(join(base, 'ws-alias', 'notes.md'))).toBe(join(ws, 'notes.md'))
    expect(realLocation(join(base, 'ws-alias', 'new', 'deeper.md'))).toBe(join(ws, 'new', 'deeper.md'))
    expect(realLocation('/no-such-dir-dsh/x')).toBe('/no-such-dir-dsh/x')
  })

  it('knows /proc per-process entries by name, and procfs mounted elsewhere only when asked to look', () => {
    expect(isProcessEntry('/proc/self')).toBe(true)
    expect(isProcessEntry('/proc/12/fd/3')).toBe(true)
    expect(isProcessEntry('/dev/fd')).toBe(true)
    expect(isProcessEntry('/proc/meminfo')).toBe(false)
    expect(isProcessEntry('/proc')).toBe(false)
    expect(isProcessEntry('/dev/stdin-not')).toBe(false)
    expect(isProcessEntry(ws)).toBe(false)
    expect(isProcessEntry('/no-such-path-dsh')).toBe(false)
  })
})
