import { afterAll, describe, expect, it } from 'vitest'
import {
  chmodSync,
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  renameSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import {
  PrivateDir,
  PrivateFileError,
  SpillWriter,
  processTempDir,
  processTempSubdir,
  spillBudget,
} from '../src/index.ts'

const scratch = mkdtempSync(join(tmpdir(), 'dsh-spill-files-test-'))
afterAll(() => rmSync(scratch, { recursive: true, force: true }))

function refusal(fn: () => unknown): PrivateFileError {
  try {
    fn()
  } catch (error) {
    expect(error).toBeInstanceOf(PrivateFileError)
    return error as PrivateFileError
  }
  throw new Error('expected a PrivateFileError')
}

describe('PrivateDir', () => {
  it('creates a fresh 0700 directory and 0600 files in it', () => {
    const dir = PrivateDir.create(scratch, 'fresh-')
    expect(dir.path.startsWith(join(scratch, 'fresh-'))).toBe(true)
    expect(statSync(dir.path).mode & 0o777).toBe(0o700)
    const path = dir.writeFile('a.txt', 'hello')
    expect(readFileSync(path, 'utf8')).toBe('hello')
    expect(statSync(path).mode & 0o777).toBe(0o600)
  })

  it('never opens an existing file or follows a planted link', () => {
    const dir = PrivateDir.create(scratch, 'links-')
    const victim = join(scratch, 'victim.yml')
    writeFileSync(victim, 'original\n')
    symlinkSync(victim, join(dir.path, 'out.log'))
    expect(refusal(() => dir.writeFile('out.log', 'evil')).code).toBe('EEXIST')
    writeFileSync(join(dir.path, 'plain.log'), 'earlier')
    expect(refusal(() => dir.writeFile('plain.log', 'later')).code).toBe('EEXIST')
    expect(readFileSync(victim, 'utf8')).toBe('original\n')
    expect(readFileSync(join(dir.path, 'plain.log'), 'utf8')).toBe('earlier')
  })

  it('refuses a configured directory that is a symlink, a file, or not a single name', () => {
    const target = mkdtempSync(join(scratch, 'target-'))
    const link = join(scratch, 'link-dir')
    symlinkSync(target, link)
    const error = refusal(() => PrivateDir.ensure(link))
    expect(error.code).toBe('UNSAFE_DIR')
    expect(error.message).toBe(`refusing to write into ${link}: it is a symbolic link`)
    writeFileSync(join(scratch, 'a-file'), '')
    expect(refusal(() => PrivateDir.ensure(join(scratch, 'a-file'))).message).toMatch(/it is not a directory$/)
    expect(refusal(() => PrivateDir.ensure('relative/dir')).code).toBe('INVALID_NAME')
    const dir = PrivateDir.create(scratch, 'names-')
    for (const bad of ['', '.', '..', 'a/b', '../x'])
      expect(refusal(() => dir.createFile(bad)).code).toBe('INVALID_NAME')
    expect(readdirSync(target)).toEqual([])
  })

  it('tightens a loose existing directory to 0700', () => {
    const path = join(scratch, 'loose')
    mkdirSync(path, { mode: 0o777 })
    chmodSync(path, 0o777)
    PrivateDir.ensure(path)
    expect(statSync(path).mode & 0o777).toBe(0o700)
  })

  it('refuses to write once its directory was swapped for a link, and leaves the link target alone', () => {
    const dir = PrivateDir.create(scratch, 'swap-')
    const elsewhere = mkdtempSync(join(scratch, 'elsewhere-'))
    renameSync(dir.path, `${dir.path}.moved`)
    symlinkSync(elsewhere, dir.path)
    expect(refusal(() => dir.writeFile('x.log', 'data')).message).toBe(
      `refusing to write into ${dir.path}: it is a symbolic link`,
    )
    rmSync(dir.path)
    mkdirSync(dir.path, { mode: 0o700 })
    expect(refusal(() => dir.writeFile('x.log', 'data')).message).toMatch(/was replaced by another directory/)
    expect(readdirSync(elsewhere)).toEqual([])
  })

  it('keeps one private directory per process and re-creates it when it was removed', () => {
    const first = processTempDir()
    expect(first.path.startsWith(join(tmpdir(), `dsh-${process.pid}-`))).toBe(true)
    expect(lstatSync(first.path).mode & 0o777).toBe(0o700)
    expect(processTempDir()).toBe(first)
    const jobs = processTempSubdir('jobs')
    expect(jobs.path).toBe(join(first.path, 'jobs'))
    rmSync(first.path, { recursive: true })
    const second = processTempDir()
    expect(second.path).not.toBe(first.path)
    expect(existsSync(second.path)).toBe(true)
    second.remove()
  })
})

describe('SpillWriter', () => {
  it('writes up to the shared budget, then a marker, and counts what was dropped', () => {
    const dir = PrivateDir.create(scratch, 'cap-')
    const budget = spillBudget(`test-${Date.now()}`, 10)
    const a = new SpillWriter(dir, 'a.log', budget)
    a.write(Buffer.from('123456'))
    a.close()
    const b = new SpillWriter(dir, 'b.log', budget)
    b.write(Buffer.from('abcdefgh'))
    b.write(Buffer.from('more'))
    b.close()
    expect(readFileSync(a.path, 'utf8')).toBe('123456')
    expect(readFileSync(b.path, 'utf8')).toMatch(
      /^abcd\n\[dsh: the spill cap of 10 bytes for this session was reached; the rest of the output is not in this file\]\n$/,
    )
    expect({ written: b.written, dropped: b.dropped, capped: b.capped, error: b.error }).toEqual({
      written: 4,
      dropped: 8,
      capped: true,
      error: undefined,
    })
    expect(budget.usedBytes).toBe(10)
  })

  it('records a write error instead of throwing (a file-size limit of the writer)', () => {
    const dir = PrivateDir.create(scratch, 'err-')
    const writer = new SpillWriter(dir, 'x.log')
    writer.close()
    // A closed writer drops silently; the error path is exercised for real in bash-local's ENOSPC test.
    writer.write(Buffer.from('late'))
    expect(writer.dropped).toBe(4)
  })
})
