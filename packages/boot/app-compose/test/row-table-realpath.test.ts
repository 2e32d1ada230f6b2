// The row table's symlink check (src/row-table.ts, memoRealpath): answers equal to the native
// realpath on real trees of symlinks, and one look per path component over a whole table pass
// instead of a full walk per row (the native realpath makes one readlink per component of every
// path: ~1,100 calls for the headless profile's rows before this).
import * as fs from 'node:fs'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { beforeEach, describe, expect, it, vi } from 'vitest'
import { composeLayers, parseLayer } from '../src/index.ts'
import { buildRowTable, loadRowTable, memoRealpath, writeRowTable } from '../src/row-table.ts'
import { INSTALL_BASE, tempDir, write } from './helpers.ts'

/** Paths each fs function was asked about in this process (this file only; see vi.mock below). */
const seen = { lstat: [] as string[], readlink: [] as string[], realpath: [] as string[] }

vi.mock('node:fs', async (importOriginal) => {
  const real = await importOriginal<typeof import('node:fs')>()
  const realpathSync = Object.assign(
    (p: fs.PathLike, o?: fs.EncodingOption) => {
      seen.realpath.push(String(p))
      return real.realpathSync(p, o)
    },
    {
      native: (p: fs.PathLike, o?: fs.EncodingOption) => {
        seen.realpath.push(String(p))
        return real.realpathSync.native(p, o)
      },
    },
  )
  const mocked = {
    ...real,
    lstatSync: ((p: fs.PathLike, o?: fs.StatSyncOptions) => {
      seen.lstat.push(String(p))
      return real.lstatSync(p, o)
    }) as typeof real.lstatSync,
    readlinkSync: ((p: fs.PathLike, o?: fs.EncodingOption) => {
      seen.readlink.push(String(p))
      return real.readlinkSync(p, o)
    }) as typeof real.readlinkSync,
    realpathSync,
  }
  return { ...mocked, default: mocked }
})

beforeEach(() => {
  for (const list of Object.values(seen)) list.length = 0
})

/** What realpath gives for `path`: the real path, or the error's code. */
function outcome(fn: (p: string) => string, path: string): string {
  try {
    return fn(path)
  } catch (error) {
    return `error ${(error as NodeJS.ErrnoException).code}`
  }
}

describe('memoRealpath', () => {
  it('gives the native realpath answer for links, chains, .. after links, loops, files as directories', () => {
    const root = tempDir('dsh-memo-realpath-')
    write(join(root, 'store/pkg/dist/index.js'), 'x')
    write(join(root, 'other/file.txt'), 'y')
    fs.mkdirSync(join(root, 'a/b/c'), { recursive: true })
    fs.mkdirSync(join(root, 'nm/@x'), { recursive: true })
    fs.symlinkSync('../../store/pkg', join(root, 'nm/@x/pkg')) // relative
    fs.symlinkSync(join(root, 'nm/@x/pkg'), join(root, 'nm/@x/chain')) // absolute, to a link
    fs.symlinkSync('a/b/c', join(root, 'deep')) // `deep/..` is a/b, not root
    fs.symlinkSync('loop2', join(root, 'loop1'))
    fs.symlinkSync('loop1', join(root, 'loop1x'))
    fs.symlinkSync('loop1', join(root, 'loop2'))
    fs.symlinkSync('nowhere', join(root, 'dangling'))
    fs.symlinkSync('other/file.txt', join(root, 'tofile'))
    fs.symlinkSync('other/file.txt/', join(root, 'tofileslash'))
    fs.symlinkSync('.', join(root, 'self'))
    const paths = [
      'nm/@x/pkg/dist/index.js',
      'nm/@x/chain/dist/index.js',
      'nm/@x/chain/dist/../package.json',
      'nm/@x/pkg/dist',
      'deep/../c',
      'deep/../../b',
      'deep/..',
      'self/self/nm/@x/pkg/dist/index.js',
      'loop1',
      'loop1x/x',
      'dangling',
      'dangling/x',
      'tofile',
      'tofile/',
      'tofile/x',
      'tofile/..',
      'tofileslash',
      'other/file.txt/.',
      'other/./file.txt',
      'missing/x',
      '',
    ].map((p) => join(root, p) + (p.endsWith('/') ? '/' : ''))
    // One memo for the whole list (as a table pass uses it), asked twice: cached answers too.
    const memo = memoRealpath()
    for (const round of [1, 2])
      for (const p of paths) {
        const native = outcome((x) => fs.realpathSync.native(x), p)
        const ours = outcome(memo, p)
        // A missing file's code is the same; the native call reports ENOENT for a dangling link.
        expect(`${round} ${p} -> ${ours}`).toBe(`${round} ${p} -> ${native}`)
      }
    expect(memo(join(root, 'nm/@x/pkg/dist/index.js'))).toBe(join(root, 'store/pkg/dist/index.js'))
  })
})

describe('the row table checks a whole profile without walking every row path from /', () => {
  it('each path component is looked at once, and the answers are real resolution', () => {
    const root = tempDir('dsh-rowtable-memo-')
    const names = Array.from({ length: 12 }, (_, i) => `@x/p${i}`)
    const layerFile = write(
      join(root, 'bundle', 'cordis.patch.yml'),
      `- insert:\n${names.map((n, i) => `    - { id: r${i}, name: "${n}" }\n`).join('')}`,
    )
    for (const name of names) {
      const at = join(root, 'packages', name.replace('/', '+'))
      write(join(at, 'package.json'), JSON.stringify({ name, exports: { '.': './dist/index.js' } }))
      write(join(at, 'dist/index.js'), 'export {}\n')
      fs.mkdirSync(join(root, 'bundle/node_modules/@x'), { recursive: true })
      fs.symlinkSync(`../../../packages/${name.replace('/', '+')}`, join(root, 'bundle/node_modules', name))
    }
    const file = join(tempDir('dsh-rowtable-memo-file-'), 'rows.json')
    writeRowTable(file, buildRowTable([layerFile], root))
    const table = loadRowTable({ file, root, env: {} })
    for (const list of Object.values(seen)) list.length = 0
    const comp = composeLayers([parseLayer(fs.readFileSync(layerFile, 'utf8'), layerFile)], INSTALL_BASE, root, {
      rowTable: table,
    })
    expect(comp.rowTable).toMatchObject({ used: 12, fallback: 0 })
    expect(comp.rows.map((r) => r.url)).toEqual(
      names.map((n) => pathToFileURL(join(root, 'packages', n.replace('/', '+'), 'dist/index.js')).href),
    )
    // Every path the checks named, a native realpath counting one look per component of its path.
    const looks = [
      ...seen.lstat,
      ...seen.readlink,
      ...seen.realpath.flatMap((p) =>
        p
          .split('/')
          .filter(Boolean)
          .map((_, i, a) => `/${a.slice(0, i + 1).join('/')}`),
      ),
    ]
    // The directories every row shares (/tmp, the checkout, bundle/node_modules/@x, packages/):
    // looked at once in the whole pass, where a walk per row visits them 12 times.
    expect(seen.lstat.filter((p, i) => seen.lstat.indexOf(p) !== i)).toEqual([])
    expect(looks.filter((p) => p === join(root, 'bundle/node_modules/@x'))).toHaveLength(1)
    expect(seen.realpath).toEqual([])
  })
})
