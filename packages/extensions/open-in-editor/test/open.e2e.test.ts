// `/open` through the real `dsh -p` (the one-shot runs a command line without a model turn). The
// editors are real subprocesses: fake `code` and `vi` scripts first on PATH that record their
// arguments and working directory.
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it, vi } from 'vitest'
import { runDsh } from '@dsh/cli-testkit'

vi.setConfig({ testTimeout: 60_000 })

const PATCH = '- insert:\n    - id: open-in-editor\n      name: "@dsh/open-in-editor"\n'

function workspace() {
  const root = realpathSync(mkdtempSync(join(tmpdir(), 'dsh-open-')))
  const bin = join(root, 'bin')
  const work = join(root, 'work')
  mkdirSync(bin)
  mkdirSync(join(work, 'src'), { recursive: true })
  writeFileSync(join(work, 'src', 'main.ts'), 'export {}\n')
  const record = join(root, 'editor.txt')
  for (const name of ['code', 'vi']) {
    const script = join(bin, name)
    writeFileSync(
      script,
      `#!/bin/sh\nprintf '%s %s|' "${name}" "$PWD" >> '${record}'\nfor a in "$@"; do printf '%s|' "$a" >> '${record}'; done\n`,
    )
    chmodSync(script, 0o755)
  }
  const failing = join(bin, 'broken-editor')
  writeFileSync(failing, '#!/bin/sh\necho "cannot open display" >&2\nexit 3\n')
  chmodSync(failing, 0o755)
  writeFileSync(join(root, 'patch.yml'), PATCH)
  const run = (task: string, env: Record<string, string>) =>
    runDsh(['-p', '--patch', join(root, 'patch.yml'), task], {
      cwd: work,
      env: { PATH: `${bin}:${process.env.PATH}`, DSH_HOME: join(root, 'home'), DEEPSEEK_API_KEY: 'sk-unused', ...env },
    })
  return { root, work, record, run, read: () => readFileSync(record, 'utf8') }
}

describe('/open', () => {
  it('opens path:line in $VISUAL (VS Code style) and in $EDITOR (vi style), from the workspace', async () => {
    const w = workspace()
    const a = await w.run('/open src/main.ts:7', { VISUAL: 'code --reuse-window', EDITOR: 'vi' })
    expect(a, a.stderr).toMatchObject({ code: 0, stdout: 'Opened src/main.ts:7 in code.\n' })
    expect(w.read()).toBe(`code ${w.work}|--reuse-window|--goto|${join(w.work, 'src/main.ts')}:7|`)
    const b = await w.run('/open src/main.ts:3', { EDITOR: 'vi' })
    expect(b, b.stderr).toMatchObject({ code: 0 })
    expect(w.read().split('code')[1].split('|').slice(-4).join('|')).toBe(
      `vi ${w.work}|+3|${join(w.work, 'src/main.ts')}|`,
    )
  })

  it('says what is wrong: no editor, a missing file, an editor that fails', async () => {
    const w = workspace()
    const none = await w.run('/open src/main.ts', {})
    expect(none.code).toBe(1)
    expect(none.stderr).toMatch(/no editor: set \$VISUAL or \$EDITOR/)
    const missing = await w.run('/open nope.ts:2', { EDITOR: 'vi' })
    expect(missing.code).toBe(1)
    expect(missing.stderr).toMatch(/nope\.ts: no such file or directory/)
    const broken = await w.run('/open', { EDITOR: 'broken-editor' })
    expect(broken.code).toBe(1)
    expect(broken.stderr).toMatch(/broken-editor exited with 3: cannot open display/)
  })
})
