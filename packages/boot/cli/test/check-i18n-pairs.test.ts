// The repository gate for bilingual pairs (scripts/check-i18n-pairs.mjs), run as a subprocess.
import { describe, expect, it } from 'vitest'
import { spawnSync } from 'node:child_process'
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'

const SCRIPT = fileURLToPath(new URL('../../../../scripts/check-i18n-pairs.mjs', import.meta.url))
const REPO = fileURLToPath(new URL('../../../../', import.meta.url))

function run(root: string) {
  return spawnSync(process.execPath, [SCRIPT, '--root', root], { encoding: 'utf8' })
}

function repo(files: Record<string, string>) {
  const root = mkdtempSync(join(tmpdir(), 'dsh-i18n-'))
  mkdirSync(join(root, 'docs/i18n'), { recursive: true })
  writeFileSync(join(root, 'docs/i18n/pairs.md'), '| source | translation |\n| --- | --- |\n| `a.md` | `a.zh.md` |\n')
  for (const [name, text] of Object.entries(files)) writeFileSync(join(root, name), text)
  return root
}

describe('check-i18n-pairs', () => {
  it('passes on the repository itself', () => {
    const r = run(REPO)
    expect(r.stderr).toBe('')
    expect(r.status).toBe(0)
  })

  it('passes when levels match, ignoring # lines inside code fences', () => {
    const r = run(repo({ 'a.md': '# A\n## B\n```sh\n# comment\n```\n', 'a.zh.md': '# 甲\n## 乙\n' }))
    expect(r.status).toBe(0)
  })

  it('names the first heading whose level differs', () => {
    const r = run(repo({ 'a.md': '# A\n## B\n## C\n', 'a.zh.md': '# 甲\n## 乙\n### 丙\n' }))
    expect(r.status).toBe(1)
    expect(r.stderr).toBe('check-i18n-pairs: a.zh.md:3: heading 3 "丙" is level 3, but a.md:3 "C" is level 2\n')
  })

  it('names the first unmatched heading when the counts differ', () => {
    const r = run(repo({ 'a.md': '# A\n## B\n', 'a.zh.md': '# 甲\n' }))
    expect(r.status).toBe(1)
    expect(r.stderr).toBe('check-i18n-pairs: a.md has 2 headings, a.zh.md has 1; first unmatched: a.md:2 "B"\n')
  })

  it('reports a listed file that does not exist', () => {
    const r = run(repo({ 'a.md': '# A\n' }))
    expect(r.status).toBe(1)
    expect(r.stderr).toMatch(/a\.zh\.md: listed in docs\/i18n\/pairs\.md but missing/)
  })
})
