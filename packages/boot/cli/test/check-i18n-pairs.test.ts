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
    const r = run(
      repo({
        'a.md': '# A\n[中文](a.zh.md)\n## B\n```sh\n# comment\n```\n',
        'a.zh.md': '# 甲\n[English](./a.md)\n## 乙\n```sh\n# 注释\n```\n',
      }),
    )
    expect(r.stderr).toBe('')
    expect(r.status).toBe(0)
  })

  it('names the first heading whose level differs', () => {
    const r = run(
      repo({ 'a.md': '# A\n[中文](a.zh.md)\n## B\n## C\n', 'a.zh.md': '# 甲\n[English](a.md)\n## 乙\n### 丙\n' }),
    )
    expect(r.status).toBe(1)
    expect(r.stderr).toBe('check-i18n-pairs: a.zh.md:4: heading 3 "丙" is level 3, but a.md:4 "C" is level 2\n')
  })

  it('names the first unmatched heading when the counts differ', () => {
    const r = run(repo({ 'a.md': '# A\n[中文](a.zh.md)\n## B\n', 'a.zh.md': '# 甲\n[English](a.md)\n' }))
    expect(r.status).toBe(1)
    expect(r.stderr).toBe('check-i18n-pairs: a.md has 2 headings, a.zh.md has 1; first unmatched: a.md:3 "B"\n')
  })

  it('reports a listed file that does not exist', () => {
    const r = run(repo({ 'a.md': '# A\n' }))
    expect(r.status).toBe(1)
    expect(r.stderr).toMatch(/a\.zh\.md: listed in docs\/i18n\/pairs\.md but missing/)
  })

  it('wants each side to link to the other above its first section', () => {
    const noBack = run(repo({ 'a.md': '# A\n[中文](a.zh.md)\n## B\n', 'a.zh.md': '# 甲\n## 乙\n[English](a.md)\n' }))
    expect(noBack.status).toBe(1)
    expect(noBack.stderr).toBe(
      'check-i18n-pairs: a.zh.md: no link to its twin a.md above the first section (a line such as "[English](a.md)" under the title)\n',
    )
    const noLink = run(repo({ 'a.md': '# A\n\nSee [docs](b.zh.md).\n', 'a.zh.md': '# 甲\n[English](a.md)\n' }))
    expect(noLink.stderr).toMatch(/^check-i18n-pairs: a\.md: no link to its twin a\.zh\.md /)
  })

  it('catches a code block the twin did not follow (a line added, a block added, another language)', () => {
    const en = (block: string) => `# A\n[中文](a.zh.md)\n## Config\n${block}`
    const zh = (block: string) => `# 甲\n[English](a.md)\n## Config\n${block}`
    const yaml1 = '```yaml\nport: 3080 # listen port\n```\n'
    const yaml2 = '```yaml\nport: 3080 # listen port\nopen: true\n```\n'
    const ok = run(repo({ 'a.md': en(yaml1), 'a.zh.md': zh('```yaml\nport: 3080 # 监听端口\n```\n') }))
    expect(ok.stderr).toBe('')
    const longer = run(repo({ 'a.md': en(yaml2), 'a.zh.md': zh(yaml1) }))
    expect(longer.status).toBe(1)
    expect(longer.stderr).toBe(
      'check-i18n-pairs: a.zh.md:4: code block 1 has 1 lines, but a.md:4 has 2; code stays verbatim in a translation, so bring the block over from a.md\n',
    )
    const more = run(repo({ 'a.md': en(`${yaml1}\`\`\`sh\ndsh web\n\`\`\`\n`), 'a.zh.md': zh(yaml1) }))
    expect(more.stderr).toBe('check-i18n-pairs: a.md has 2 code blocks, a.zh.md has 1; first unmatched: a.md:7\n')
    const lang = run(repo({ 'a.md': en(yaml1), 'a.zh.md': zh(yaml1.replace('yaml', 'json')) }))
    expect(lang.stderr).toMatch(/a\.zh\.md:4: code block 1 is "json", but a\.md:4 is "yaml"/)
  })
})
