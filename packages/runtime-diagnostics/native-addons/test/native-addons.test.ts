// The add-on check on real directories (a package without its binary, one with it, none at all)
// and the start-up line through the real `dsh` bin: once per run, naming what is off, and absent
// when the add-ons are there (this checkout builds both).
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startMockServer, type MockServer } from '@dsh/llm-mock-server'
import { runDsh } from '@dsh/cli-testkit'
import { missingAddonsLine, nativeAddons } from '../src/index.ts'

/** A directory whose node_modules holds the given add-on packages, with or without their binary. */
function layout(addons: Record<string, string | undefined>): string {
  const dir = mkdtempSync(join(tmpdir(), 'dsh-native-addons-'))
  for (const [name, binary] of Object.entries(addons)) {
    const pkg = join(dir, 'node_modules', name)
    mkdirSync(pkg, { recursive: true })
    writeFileSync(join(pkg, 'package.json'), JSON.stringify({ name, version: '0.0.0', main: 'index.js' }))
    if (binary) {
      mkdirSync(join(pkg, binary, '..'), { recursive: true })
      writeFileSync(join(pkg, binary), '')
    }
  }
  return dir
}

describe('nativeAddons', () => {
  it('this package resolves both add-ons, built, in the checkout', () => {
    expect(nativeAddons().map((s) => [s.name, s.present])).toEqual([
      ['better-sqlite3', true],
      ['node-pty', true],
    ])
  })

  it('a package without its binary, and a missing package, count as absent; a prebuild counts as present', () => {
    const dir = layout({
      'better-sqlite3': undefined,
      'node-pty': `prebuilds/${process.platform}-${process.arch}/pty.node`,
    })
    const statuses = nativeAddons(dir)
    expect(statuses[0]).toMatchObject({ name: 'better-sqlite3', present: false })
    expect(statuses[0].reason).toMatch(/^not built/)
    expect(statuses[1]).toMatchObject({ name: 'node-pty', present: true })
    const none = nativeAddons(layout({}))
    expect(none.map((s) => s.reason)).toEqual(['not installed', 'not installed'])
  })

  it('the line names each absent add-on and what is off; none when all are present', () => {
    const none = nativeAddons(layout({}))
    expect(missingAddonsLine(none)).toBe(
      "dsh: running without native add-ons better-sqlite3 (session search off, sessions in JSONL), node-pty (terminals off); reinstall dsh where a C++ compiler and Node's headers are available to turn them on",
    )
    expect(missingAddonsLine(none.slice(1))).toMatch(/add-on node-pty \(terminals off\); .* turn it on$/)
    expect(missingAddonsLine(nativeAddons())).toBeUndefined()
  })
})

describe('the start-up line through the real bin', () => {
  let mock: MockServer
  beforeAll(async () => {
    mock = await startMockServer({ steps: [{ text: 'Done.' }, { text: 'Done again.' }] } as never)
  })
  afterAll(async () => mock?.close())

  const run = async (patch?: string) => {
    const root = mkdtempSync(join(tmpdir(), 'dsh-native-addons-e2e-'))
    const home = join(root, 'home')
    mkdirSync(home)
    const args = patch ? ['--patch', patch, '-p', 'hi'] : ['-p', 'hi']
    return runDsh(args, {
      cwd: root,
      env: { DSH_HOME: home, DEEPSEEK_BASE_URL: mock.baseURL, DEEPSEEK_API_KEY: 'sk-test-not-a-real-key' },
    })
  }

  it('absent add-ons: the run works and stderr has the line once', async () => {
    const dir = layout({})
    const patch = join(dir, 'addons.patch.yml')
    writeFileSync(patch, `- id: native-addons\n  config:\n    resolveFrom: ${JSON.stringify(dir)}\n`)
    const r = await run(patch)
    expect(r.stdout).toContain('Done.')
    expect(r.code).toBe(0)
    const lines = r.stderr.split('\n').filter((l) => l.includes('without native add-on'))
    expect(lines).toEqual([missingAddonsLine(nativeAddons(dir))])
  })

  it('add-ons present (this checkout): no line', async () => {
    const r = await run()
    expect(r.code).toBe(0)
    expect(r.stdout).toContain('Done again.')
    expect(r.stderr).not.toContain('without native add-on')
  })
})
