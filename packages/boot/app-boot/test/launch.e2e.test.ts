// Every dsh bin starts through the one shared launcher (@dsh/app-boot/launch), so their start-up
// (DSH_DEV on the sources, compile cache) and exit behaviour cannot drift apart again.
import { spawnSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'

const REPO = fileURLToPath(new URL('../../../../', import.meta.url))
const REGISTER = fileURLToPath(new URL('./fixtures/module-log/register.mjs', import.meta.url))
const LAUNCHER = fileURLToPath(new URL('../bin-support/launch.mjs', import.meta.url))
const rootBins = (JSON.parse(readFileSync(join(REPO, 'package.json'), 'utf8')) as { bin: Record<string, string> }).bin

/** Runs `bin args` from a directory outside the repository with an empty dsh home. */
function run(bin: string, args: string[], env: Record<string, string> = {}) {
  const root = mkdtempSync(join(tmpdir(), 'dsh-launch-'))
  const log = join(root, 'modules.txt')
  try {
    const r = spawnSync(process.execPath, [join(REPO, bin), ...args], {
      cwd: root,
      env: { ...process.env, DSH_HOME: join(root, 'home'), HOME: root, DSH_TEST_MODULE_LOG: log, NODE_OPTIONS: `--import ${REGISTER}`, ...env },
      encoding: 'utf8',
      timeout: 60_000,
    })
    let modules: string[] = []
    try {
      modules = readFileSync(log, 'utf8').split('\n').filter(Boolean)
    } catch {}
    return { code: r.status, stdout: r.stdout, stderr: r.stderr, modules }
  } finally {
    rmSync(root, { recursive: true, force: true })
  }
}

// A command of each bin that starts its app (not an answer printed before the launcher).
const CASES: Record<string, { args: string[]; expect: RegExp }> = {
  dsh: { args: ['-p', '/help'], expect: /\/help/ },
  'dsh-acp': { args: ['--help'], expect: /Agent Client Protocol/ },
  'dsh-jsonrpc-agent': { args: ['--version'], expect: /^dsh-jsonrpc-agent \d/ },
}

describe('the shared launcher', () => {
  it('lists a case for every bin the root package.json installs', () => {
    expect(Object.keys(CASES).sort()).toEqual(Object.keys(rootBins).sort())
  })

  for (const [name, c] of Object.entries(CASES)) {
    it(`${name} starts through @dsh/app-boot/launch`, () => {
      const r = run(rootBins[name], c.args)
      expect(r.code, r.stderr).toBe(0)
      expect(r.stdout).toMatch(c.expect)
      expect(r.modules).toContain(`file://${LAUNCHER}`)
    })
  }

  it('dsh mcp (a subcommand bin) starts through it too', () => {
    const r = run('packages/mcp/mcp-client/bin/dsh-mcp.mjs', ['list'])
    expect(r.code, r.stderr).toBe(0)
    expect(r.modules).toContain(`file://${LAUNCHER}`)
  })

  it('DSH_DEV=1 runs the sources from any working directory (tsx resolved from dsh, not the cwd)', () => {
    const r = run(rootBins['dsh-jsonrpc-agent'], ['--version'], { DSH_DEV: '1' })
    expect(r.code, r.stderr).toBe(0)
    expect(r.stdout).toMatch(/^dsh-jsonrpc-agent \d/)
    // The re-run loaded the TypeScript sources of the server package.
    expect(r.modules.some((m) => m.endsWith('/packages/sdk/server/src/main.ts'))).toBe(true)
  })
})
