// The registry recount (scripts/registry-count.mjs): it runs as a subprocess over the reference
// registry, every package its map names is a workspace package, docs/registry-status.md is what
// the script prints, and a registry it does not know (a new paragraph) or a map naming a package
// that does not exist fails loudly.
import { spawnSync } from 'node:child_process'
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { describe, expect, it } from 'vitest'

const SCRIPT = fileURLToPath(new URL('../../../../scripts/registry-count.mjs', import.meta.url))
const DOC = fileURLToPath(new URL('../../../../docs/registry-status.md', import.meta.url))
const REGISTRY = fileURLToPath(new URL('../../../../../shared/reference/plugin-registry.txt', import.meta.url))
const run = (...args: string[]) => spawnSync(process.execPath, [SCRIPT, ...args], { encoding: 'utf8' })

type Entry = { key: string; packages?: string[]; missing?: string }
type Result = { built: number; partial: number; missing: number; total: number; problems: string[] }
const { count, MAP, workspacePackages } = (await import(pathToFileURL(SCRIPT).href)) as {
  count(text: string, packages: Set<string>, map?: Entry[]): Result
  MAP: Entry[]
  workspacePackages(): Set<string>
}

describe('scripts/registry-count.mjs', () => {
  it('names only workspace packages, each entry either packages or a missing name', () => {
    const names = workspacePackages()
    for (const e of MAP) {
      expect(Boolean(e.missing) !== Boolean(e.packages?.length), e.key).toBe(true)
      for (const p of e.packages ?? []) expect(names.has(p), `${p} (for "${e.key}")`).toBe(true)
    }
  })

  it.skipIf(!existsSync(REGISTRY))('counts the registry, and docs/registry-status.md is its output', () => {
    const r = run()
    expect(r.stderr).toBe('')
    expect(r.status).toBe(0)
    const m = /^registry: (\d+)\/(\d+) built, (\d+) partial, (\d+) missing$/m.exec(r.stdout)
    expect(m).not.toBeNull()
    const [built, total, partial, missing] = m!.slice(1).map(Number)
    expect(total).toBe(MAP.length)
    expect(built + partial + missing).toBe(total)
    expect(readFileSync(DOC, 'utf8')).toBe(run('--markdown').stdout)
  })

  it('fails naming a paragraph it has no entry for, and a package that does not exist', () => {
    const text = ['title', 'A brand new plugin paragraph.', 'Another one.'].join('\n\n')
    const dir = mkdtempSync(join(tmpdir(), 'dsh-registry-'))
    writeFileSync(join(dir, 'registry.txt'), text)
    const r = run('--registry', join(dir, 'registry.txt'))
    expect(r.status).toBe(1)
    expect(r.stderr).toContain('registry-count: paragraph 1 has no entry in the map: "A brand new plugin paragraph."')
    const result = count(text, new Set(['@dsh/a']), [
      { key: 'A brand new', packages: ['@dsh/a'] },
      { key: 'Another', packages: ['@dsh/gone'] },
    ])
    expect(result).toMatchObject({ built: 1, missing: 1, total: 2 })
    expect(result.problems).toEqual(['paragraph 2 names @dsh/gone, which is not a workspace package'])
    expect(run('--registry', join(dir, 'nope.txt')).status).toBe(2)
  })
})
