// Every dsh bin starts through the one shared launcher (@dsh/app-boot/launch), so their start-up
// (DSH_DEV on the sources, compile cache) and exit behaviour cannot drift apart again.
import { spawnSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
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
      env: {
        ...process.env,
        DSH_HOME: join(root, 'home'),
        HOME: root,
        DSH_TEST_MODULE_LOG: log,
        NODE_OPTIONS: `--import ${REGISTER}`,
        ...env,
      },
      encoding: 'utf8',
      timeout: 60_000,
    })
    let modules: string[] = []
    try {
      // Each line is `<url> <format>`.
      modules = readFileSync(log, 'utf8')
        .split('\n')
        .filter(Boolean)
        .map((line) => line.split(' ')[0])
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

  describe('the exit after run() resolves', () => {
    /** A bin whose run() writes 1 MiB to stdout, notes a natural drain, leaves `leak` open and resolves 3. */
    function exitBin(leak: boolean) {
      const dir = mkdtempSync(join(tmpdir(), 'dsh-launch-exit-'))
      const bin = join(dir, 'bin.mjs')
      writeFileSync(
        bin,
        `import { launch } from ${JSON.stringify(LAUNCHER)}\n` +
          `await launch({ name: 'probe', bin: import.meta.url, argv: [], run: async () => {\n` +
          `  process.on('beforeExit', () => process.stderr.write('drained\\n'))\n` +
          (leak ? `  setInterval(() => {}, 1000)\n` : '') +
          `  process.stdout.write('x'.repeat(1 << 20))\n` +
          `  return 3\n` +
          `} })\n`,
      )
      return { dir, bin }
    }

    /** Runs the bin with DSH_DEBUG set to `debug`; the exit code and the whole stdout are always kept. */
    function runExitBin(leak: boolean, debug: string) {
      const { dir, bin } = exitBin(leak)
      try {
        const r = spawnSync(process.execPath, [bin], {
          env: { ...process.env, DSH_DEBUG: debug },
          encoding: 'utf8',
          maxBuffer: 4 << 20,
          timeout: 30_000,
        })
        expect(r.status).toBe(3)
        expect(r.stdout.length).toBe(1 << 20)
        return r.stderr
      } finally {
        rmSync(dir, { recursive: true, force: true })
      }
    }

    it('exits with the code once stdout/stderr are flushed, without waiting for the loop to drain', () => {
      // A natural drain would have emitted beforeExit (and then torn the heap down).
      expect(runExitBin(false, '')).not.toContain('drained')
    })

    it('under DSH_DEBUG lets the loop drain and names a leaked handle when forcing the exit 2 s later', () => {
      expect(runExitBin(true, '1')).toMatch(
        /probe: debug: forced exit: still running 2 s after the app ended \(open: .*\)/,
      )
    })
  })
})
