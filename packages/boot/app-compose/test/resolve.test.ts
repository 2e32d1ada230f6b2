// Row name resolution (resolveFrom): packages with an `exports` map resolve on a fast path with the
// `import` conditions plus the process's `--conditions`, symlinks resolved; everything else goes
// through Node's resolver as before.
import { mkdirSync, realpathSync, symlinkSync } from 'node:fs'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { describe, expect, it } from 'vitest'
import { resolveFrom } from '../src/index.ts'
import { tempDir, write } from './helpers.ts'

const url = (file: string) => pathToFileURL(realpathSync(file)).href

/** A project dir with a layer file and packages under node_modules (one of them symlinked). */
function project() {
  const root = tempDir('dsh-resolve-')
  const layer = write(join(root, 'bundle', 'cordis.patch.yml'), '[]\n')
  const pkg = (name: string, json: object, files: string[]) => {
    const dir = join(root, 'store', name.replace('/', '+'))
    write(join(dir, 'package.json'), JSON.stringify({ name, ...json }))
    for (const f of files) write(join(dir, f), 'export {}\n')
    const link = join(root, 'node_modules', name)
    mkdirSync(join(link, '..'), { recursive: true })
    symlinkSync(dir, link)
    return dir
  }
  return { root, layer, pkg }
}

describe('resolveFrom', () => {
  it('picks the import target of an exports map, through the symlink to the real file', () => {
    const { layer, pkg } = project()
    const dir = pkg(
      '@x/dual',
      { exports: { '.': { import: './esm.js', require: './cjs.cjs' }, './client': { default: './client.js' } } },
      ['esm.js', 'cjs.cjs', 'client.js'],
    )
    expect(resolveFrom('@x/dual', layer)).toBe(url(join(dir, 'esm.js')))
    expect(resolveFrom('@x/dual/client', layer)).toBe(url(join(dir, 'client.js')))
    expect(resolveFrom('@x/dual', layer)).not.toContain('node_modules')
  })

  it('honours the conditions this process runs with (vitest runs with --conditions development)', () => {
    expect(process.execArgv.join(' ')).toMatch(/--conditions[ =]development/)
    const { layer, pkg } = project()
    const dir = pkg('dev-pkg', { exports: { '.': { development: './src.js', default: './dist.js' } } }, [
      'src.js',
      'dist.js',
    ])
    expect(resolveFrom('dev-pkg', layer)).toBe(url(join(dir, 'src.js')))
  })

  it("leaves packages without exports, pattern exports and missing targets to Node's resolver", () => {
    const { layer, pkg } = project()
    const plain = pkg('plain', { main: './main.js' }, ['main.js'])
    expect(resolveFrom('plain', layer)).toBe(url(join(plain, 'main.js')))
    const pattern = pkg('pattern', { exports: { './*': './lib/*.js' } }, ['lib/a.js'])
    expect(resolveFrom('pattern/a', layer)).toBe(url(join(pattern, 'lib', 'a.js')))
    pkg('broken', { exports: { '.': './gone.js' } }, [])
    expect(resolveFrom('broken', layer)).toBeUndefined()
    expect(resolveFrom('not-installed', layer)).toBeUndefined()
  })
})
