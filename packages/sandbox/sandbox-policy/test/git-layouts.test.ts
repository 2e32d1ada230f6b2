// projectControlPaths on git layouts a cloned repository can hold on purpose: the exact list for a
// plain repository (nothing invented, nothing from .git/logs), bounded chains of common directories,
// submodules and worktrees, pointer files and `.git` links that lead nowhere useful, a `commondir`
// that is a FIFO (reading it would hang dsh), a root that does not exist, and a root too large to
// scan for checkouts. Built by hand (no git binary): each layout is the smallest that shows the rule.
// Mutation testing (`pnpm mutation sandbox-policy`) showed these bounds and guards unpinned.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { execFileSync } from 'node:child_process'
import { mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { GIT_DIR_CONTROL_PATHS, PROJECT_CONTROL_PATHS } from '@dsh/sandbox'
import { projectControlPaths } from '../src/index.ts'

let base: string
beforeAll(() => {
  base = realpathSync(mkdtempSync(join(tmpdir(), 'dsh-policy-git-')))
})
afterAll(() => rmSync(base, { recursive: true, force: true }))

const dir = (...parts: string[]) => {
  const path = join(base, ...parts)
  mkdirSync(path, { recursive: true })
  return path
}

/** A git directory at `path` as far as projectControlPaths looks: a directory holding a HEAD file. */
const gitDir = (path: string) => {
  mkdirSync(path, { recursive: true })
  writeFileSync(join(path, 'HEAD'), 'ref: refs/heads/main\n')
  return path
}

const own = (root: string) => PROJECT_CONTROL_PATHS.map((entry) => join(root, entry))
const controlsOf = (git: string) => GIT_DIR_CONTROL_PATHS.map((entry) => join(git, entry))
const sorted = (paths: string[]) => [...paths].sort()

describe('the control paths of a repository', () => {
  it('a plain repository: its own entries and its git directory’s, nothing else (not .git/logs, no invented path)', () => {
    const ws = dir('plain')
    const git = gitDir(join(ws, '.git'))
    // A reflog directory holds a file named HEAD too: it is not a git directory.
    mkdirSync(join(git, 'logs'))
    writeFileSync(join(git, 'logs', 'HEAD'), '')
    mkdirSync(join(git, 'hooks'))
    const paths = projectControlPaths(ws)
    expect(sorted(paths)).toEqual(sorted([...new Set([...own(ws), ...controlsOf(git)])]))
    expect(paths.every((path) => path.startsWith('/'))).toBe(true)
  })

  it('a root that does not exist lists its own entries and nothing else', () => {
    const missing = join(base, 'not-created')
    expect(sorted(projectControlPaths(missing))).toEqual(sorted([...own(missing), join(missing, '.git')]))
  })

  it('follows commondir nine git directories deep and no further (a hostile chain is bounded)', () => {
    const ws = dir('common-chain')
    const chain = Array.from({ length: 12 }, (_, i) => gitDir(join(base, 'common-chain-git', `g${i}`)))
    writeFileSync(join(ws, '.git'), `gitdir: ${chain[0]}\n`)
    for (let i = 0; i < chain.length - 1; i++) writeFileSync(join(chain[i], 'commondir'), `../g${i + 1}\n`)
    const paths = projectControlPaths(ws)
    for (let i = 0; i <= 8; i++) expect(paths, `g${i}`).toContain(join(chain[i], 'hooks'))
    for (let i = 9; i < chain.length; i++) expect(paths, `g${i}`).not.toContain(join(chain[i], 'hooks'))
  })

  it('follows nested submodule directories nine deep and no further', () => {
    const ws = dir('module-chain')
    let git = gitDir(join(ws, '.git'))
    const chain = [git]
    for (let i = 1; i < 12; i++) {
      git = gitDir(join(git, 'modules', `m${i}`))
      chain.push(git)
    }
    const paths = projectControlPaths(ws)
    for (let i = 0; i <= 8; i++) expect(paths, `level ${i}`).toContain(join(chain[i], 'hooks'))
    for (let i = 9; i < chain.length; i++) expect(paths, `level ${i}`).not.toContain(join(chain[i], 'hooks'))
  })

  it('follows worktree directories nine deep and no further', () => {
    const ws = dir('worktree-chain')
    let git = gitDir(join(ws, '.git'))
    const chain = [git]
    for (let i = 1; i < 12; i++) {
      git = gitDir(join(git, 'worktrees', `w${i}`))
      chain.push(git)
    }
    const paths = projectControlPaths(ws)
    for (let i = 0; i <= 8; i++) expect(paths, `level ${i}`).toContain(join(chain[i], 'hooks'))
    for (let i = 9; i < chain.length; i++) expect(paths, `level ${i}`).not.toContain(join(chain[i], 'hooks'))
  })

  it('a submodule name holds up to four path segments; worktree names one', () => {
    const ws = dir('module-names')
    const git = gitDir(join(ws, '.git'))
    const four = gitDir(join(git, 'modules', 'a', 'b', 'c', 'd'))
    const five = gitDir(join(git, 'modules', 'p', 'q', 'r', 's', 't'))
    const tree = gitDir(join(git, 'worktrees', 'one'))
    const nestedTree = gitDir(join(git, 'worktrees', 'x', 'y'))
    // A dangling link and a plain file under modules/ are skipped, not an error.
    symlinkSync(join(base, 'nowhere'), join(git, 'modules', 'dangling'))
    writeFileSync(join(git, 'modules', 'file'), '')
    const paths = projectControlPaths(ws)
    expect(paths).toContain(join(four, 'hooks'))
    expect(paths).toContain(join(tree, 'hooks'))
    expect(paths).not.toContain(join(five, 'hooks'))
    expect(paths).not.toContain(join(nestedTree, 'hooks'))
    // Every entry is an absolute path under this tree: nothing found is invented.
    expect(paths.every((path) => path.startsWith(`${ws}/`))).toBe(true)
  })
})

describe('pointers that lead nowhere useful', () => {
  it('a .git file without a gitdir line is itself a control path, and nothing more', () => {
    const ws = dir('no-pointer')
    writeFileSync(join(ws, '.git'), 'this is not a pointer\n')
    expect(sorted(projectControlPaths(ws))).toEqual(sorted([...own(ws), join(ws, '.git')]))
  })

  it('a .git link to a regular file or to nothing is not taken for a git directory', () => {
    const toFile = dir('git-link-file')
    writeFileSync(join(base, 'plain-file'), 'x')
    symlinkSync(join(base, 'plain-file'), join(toFile, '.git'))
    const fromFile = projectControlPaths(toFile)
    expect(fromFile).toEqual(expect.arrayContaining(own(toFile)))
    expect(fromFile.some((path) => path.startsWith(`${join(base, 'plain-file')}/`))).toBe(false)
    const dangling = dir('git-link-dangling')
    symlinkSync(join(base, 'no-such-git'), join(dangling, '.git'))
    expect(projectControlPaths(dangling)).toEqual(expect.arrayContaining(own(dangling)))
  })

  it('a commondir that is a directory is not read as a path', () => {
    const ws = dir('commondir-dir')
    const git = gitDir(join(ws, '.git'))
    mkdirSync(join(git, 'commondir'))
    expect(sorted(projectControlPaths(ws))).toEqual(sorted([...new Set([...own(ws), ...controlsOf(git)])]))
  })

  it('a commondir that is a FIFO is not opened (the read would wait for a writer forever)', () => {
    const ws = dir('commondir-fifo')
    const git = gitDir(join(ws, '.git'))
    execFileSync('mkfifo', [join(git, 'commondir')])
    expect(projectControlPaths(ws)).toContain(join(git, 'hooks'))
  })
})

describe('checkouts one level down', () => {
  it('are looked for in a root of at most 512 entries, not in a larger one', () => {
    const small = dir('entries-512')
    const large = dir('entries-513')
    for (const root of [small, large]) {
      gitDir(join(root, 'checkout', '.git'))
      const count = root === small ? 511 : 512
      for (let i = 0; i < count; i++) writeFileSync(join(root, `f${i}`), '')
    }
    expect(projectControlPaths(small)).toContain(join(small, 'checkout', '.git', 'hooks'))
    expect(projectControlPaths(large)).not.toContain(join(large, 'checkout', '.git', 'hooks'))
  })
})
