// End-to-end: what a boot of the headless profile loads. Work that only a later call needs (the
// edit tool's diff library, the sandbox runner probe) must stay off the path of a boot that ends
// at once, such as `dsh --profile headless --help`.
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'
import { runDsh } from '@dsh/cli-testkit'

const REGISTER = fileURLToPath(new URL('./fixtures/module-log/register.mjs', import.meta.url))

describe('the boot path of dsh --profile headless --help', () => {
  it('loads no module that only a later call needs (the diff library)', { timeout: 60_000 }, async () => {
    const root = mkdtempSync(join(tmpdir(), 'dsh-boot-path-'))
    const log = join(root, 'modules.txt')
    const env = { HOME: root, DSH_HOME: join(root, 'dsh'), DSH_TEST_MODULE_LOG: log, NODE_OPTIONS: `--import ${REGISTER}` }
    try {
      // An extra (empty) layer makes the launcher boot the tree for --help instead of printing the
      // bundle's fixed help text without a boot.
      const layer = join(root, 'empty.patch.yml')
      writeFileSync(layer, '[]\n')
      const run = await runDsh(['--profile', 'headless', '--patch', layer, '--help'], { cwd: root, env })
      expect(run.code, run.stderr).toBe(0)
      expect(run.stdout).toContain('--output-format')
      const loaded = readFileSync(log, 'utf8').split('\n').filter(Boolean)
      // The log works: the boot loaded the row modules, the edit tool among them.
      expect(loaded.some((url) => url.includes('/tool-fs/dist/'))).toBe(true)
      expect(loaded.filter((url) => /\/node_modules\/diff\//.test(url))).toEqual([])
    } finally {
      if (existsSync(root)) rmSync(root, { recursive: true, force: true })
    }
  })
})
