// A tarball spec's package name is read in this process (gzip + tar headers), never by starting
// `tar` (issue #35: only the seam packages start programs). Archives are made by the system tar.
import { execFileSync } from 'node:child_process'
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { parseSpec } from '../src/spec.ts'

const dir = mkdtempSync(join(tmpdir(), 'dsh-plugin-spec-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

function archive(name: string, flags: string, top: string, files: Record<string, string>): string {
  const src = mkdtempSync(join(dir, 'src-'))
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(join(src, top, path, '..'), { recursive: true })
    writeFileSync(join(src, top, path), text)
  }
  const out = join(dir, name)
  execFileSync('tar', [flags, out, '-C', src, top])
  return out
}

describe('tarball specs', () => {
  it('reads package/package.json from a .tgz, any top folder, a plain .tar and long names', () => {
    const deep = `lib/${'x'.repeat(120)}/index.js`
    const tgz = archive('a.tgz', '-czf', 'package', {
      [deep]: '',
      'package.json': JSON.stringify({ name: 'dsh-plugin-a' }),
    })
    expect(parseSpec(tgz, '/')).toMatchObject({ kind: 'tarball', name: 'dsh-plugin-a', install: tgz })
    expect(
      parseSpec(
        archive('b.tgz', '-czf', 'other', { 'package.json': JSON.stringify({ name: '@me/dsh-plugin-b' }) }),
        '/',
      ).name,
    ).toBe('@me/dsh-plugin-b')
    expect(
      parseSpec(archive('c.tar', '-cf', 'package', { 'package.json': JSON.stringify({ name: 'dsh-plugin-c' }) }), '/')
        .name,
    ).toBe('dsh-plugin-c')
  })

  it('refuses junk, an archive without a top package.json, and a bad manifest in one line', () => {
    writeFileSync(join(dir, 'junk.tgz'), 'not a tarball')
    expect(() => parseSpec(join(dir, 'junk.tgz'), '/')).toThrow(
      /junk\.tgz: not a readable \.tgz package \(no tar entries found\)$/,
    )
    writeFileSync(join(dir, 'bad-gzip.tgz'), Buffer.from([0x1f, 0x8b, 1, 2, 3]))
    expect(() => parseSpec(join(dir, 'bad-gzip.tgz'), '/')).toThrow(
      /bad-gzip\.tgz: not a readable \.tgz package \(.+\)$/,
    )
    const nested = archive('nested.tgz', '-czf', 'package', { 'sub/package.json': JSON.stringify({ name: 'x' }) })
    expect(() => parseSpec(nested, '/')).toThrow(/the tarball has no <folder>\/package.json at its top/)
    const bad = archive('bad.tgz', '-czf', 'package', { 'package.json': '{"name": 1}' })
    expect(() => parseSpec(bad, '/')).toThrow(
      /package.json inside\): field "name" is missing or not a valid package name/,
    )
  })
})
