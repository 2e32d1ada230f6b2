// The repository gate for package READMEs (scripts/check-readmes.mjs), run as a subprocess on
// small fixture trees in a temp dir.
import { describe, expect, it } from 'vitest'
import { spawnSync } from 'node:child_process'
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'

const SCRIPT = fileURLToPath(new URL('../../../../scripts/check-readmes.mjs', import.meta.url))

const GOOD = [
  '# @dsh/x',
  '',
  'Owns the x.',
  '',
  '## Config',
  '',
  '```yaml',
  '## not a heading',
  '```',
  '',
  '## Behaviour',
  '',
  '## Model Experience',
  '',
  'Nothing.',
  '',
  '## Known Limitations',
  '',
].join('\n')

function run(root: string, ...extra: string[]) {
  return spawnSync(process.execPath, [SCRIPT, '--root', root, ...extra], { encoding: 'utf8' })
}

/** A tree with one package per entry; `undefined` text means the package has no README. */
function tree(readmes: Record<string, string | undefined>) {
  const root = mkdtempSync(join(tmpdir(), 'dsh-readmes-'))
  for (const [dir, text] of Object.entries(readmes)) {
    mkdirSync(join(root, dir), { recursive: true })
    const name = dir.split('/').pop()
    writeFileSync(join(root, dir, 'package.json'), `${JSON.stringify({ name: `@dsh/${name}` })}\n`)
    if (text !== undefined) writeFileSync(join(root, dir, 'README.md'), text)
  }
  return root
}

describe('check-readmes', () => {
  it('passes when every package and bundle README has the sections in order', () => {
    const r = run(tree({ 'packages/a/one': GOOD, 'packages/b/two': GOOD, 'bundles/base': GOOD }))
    expect(r.stderr).toBe('')
    expect(r.status).toBe(0)
    expect(r.stdout).toBe('check-readmes: ok (3 READMEs)\n')
  })

  it('names the file and the missing section', () => {
    const bad = GOOD.replace('## Model Experience', '## Model experience')
    const r = run(tree({ 'packages/a/one': GOOD, 'packages/b/two': bad }))
    expect(r.status).toBe(1)
    expect(r.stderr).toBe('check-readmes: packages/b/two/README.md: missing "## Model Experience"\n')
  })

  it('names the file and the sections out of order', () => {
    const bad = GOOD.replace('## Model Experience', '## Tmp')
      .replace('## Known Limitations', '## Model Experience')
      .replace('## Tmp', '## Known Limitations')
    const r = run(tree({ 'bundles/base': bad }))
    expect(r.status).toBe(1)
    expect(r.stderr).toBe(
      'check-readmes: bundles/base/README.md: "## Known Limitations" (line 13) must come after "## Model Experience" (line 17)\n',
    )
  })

  it('requires an intro paragraph before the first section', () => {
    const bad = GOOD.replace('Owns the x.\n', '')
    const r = run(tree({ 'packages/a/one': bad }))
    expect(r.status).toBe(1)
    expect(r.stderr).toBe('check-readmes: packages/a/one/README.md: no intro paragraph before the first "##" heading\n')
  })

  it('reports a package without a README, and --all lists every failing file', () => {
    const root = tree({
      'packages/a/one': undefined,
      'packages/a/two': GOOD.replace('## Config', '## Settings'),
      'packages/c/ok': GOOD,
    })
    const first = run(root)
    expect(first.status).toBe(1)
    expect(first.stderr).toBe('check-readmes: packages/a/one/README.md: missing\n')
    const all = run(root, '--all')
    expect(all.status).toBe(1)
    expect(all.stderr).toBe(
      'check-readmes: packages/a/one/README.md: missing\ncheck-readmes: packages/a/two/README.md: missing "## Config"\n',
    )
  })

  it('names a README line that points at a package the workspace does not have', () => {
    const text = GOOD.replace('Owns the x.', 'Owns the x; see `@dsh/two` and `@dsh/gone` for more.')
    const root = tree({ 'packages/a/one': text, 'packages/b/two': GOOD })
    const r = run(root)
    expect(r.status).toBe(1)
    expect(r.stderr).toBe(
      'check-readmes: packages/a/one/README.md:3: names @dsh/gone, which is not a package of this workspace\n',
    )
    // The same check covers the root README and docs/, where users read first.
    writeFileSync(join(root, 'packages/a/one/README.md'), GOOD)
    mkdirSync(join(root, 'docs', 'guide'), { recursive: true })
    writeFileSync(join(root, 'docs', 'guide', 'start.md'), '# Start\n\nMount `@dsh/two`, then `@dsh/renamed`.\n')
    const docs = run(root)
    expect(docs.status).toBe(1)
    expect(docs.stderr).toBe(
      'check-readmes: docs/guide/start.md:3: names @dsh/renamed, which is not a package of this workspace\n',
    )
  })

  it('skips name patterns and placeholders', () => {
    const text = GOOD.replace(
      'Owns the x.',
      'Owns the x. Bundles are `@dsh/bundle-*`, a plugin is `@dsh/<name>` or `@dsh/session-persistence-...`.',
    )
    const r = run(tree({ 'packages/a/one': text }))
    expect(r.stderr).toBe('')
    expect(r.status).toBe(0)
  })

  it('fails loud on a root without packages', () => {
    const root = mkdtempSync(join(tmpdir(), 'dsh-readmes-empty-'))
    const r = run(root)
    expect(r.status).toBe(1)
    expect(r.stderr).toMatch(/no packages\/\*\/\* or bundles\/\* directories found/)
  })
})
