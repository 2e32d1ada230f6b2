// End-to-end: the prelinked stack's V8 code cache is written at app/ready and again when the app
// stops, so the functions a one-shot runs after the boot (its turn: the request, the stream, the
// tool call, the session writes) come from the cache on later starts instead of being compiled
// lazily every time (callgrind: one-shot instructions -5 %, .agents/notes/boot-cuts-2026-12-08.md).
import { mkdirSync, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { runDsh } from '@dsh/cli-testkit'
import { startMockServer, type MockServer } from '@dsh/llm-mock-server'

const roots: string[] = []
let server: MockServer | undefined
afterAll(async () => {
  await server?.close()
  for (const root of roots) rmSync(root, { recursive: true, force: true })
})

/** The headless stack's cache file in `home` (exactly one) and its size. */
function stackCache(home: string): { name: string; size: number } {
  const dir = join(home, '.cache', 'compile')
  const files = readdirSync(dir).filter((f) => f.startsWith('prelink-dsh-stack-bundles-headless-') && f.endsWith('.v8'))
  expect(files).toHaveLength(1)
  return { name: files[0], size: statSync(join(dir, files[0])).size }
}

describe('the stack code cache of a first start', () => {
  it('holds what a one-shot ran after the boot, not only the boot', { timeout: 120_000 }, async () => {
    const root = mkdtempSync(join(tmpdir(), 'dsh-stack-cache-'))
    roots.push(root)
    const cwd = join(root, 'project')
    mkdirSync(cwd)

    // A boot that stops right after app/ready (the help of the headless runner, with an empty
    // extra layer so the tree boots): its cache holds the boot's functions.
    const layer = join(root, 'empty.patch.yml')
    writeFileSync(layer, '[]\n')
    const bootOnly = join(root, 'home-boot')
    const help = await runDsh(['--profile', 'headless', '--patch', layer, '--help'], {
      cwd,
      env: { HOME: root, DSH_HOME: bootOnly, NODE_COMPILE_CACHE: undefined },
    })
    expect(help.code, help.stderr).toBe(0)
    expect(help.stdout).toContain('--output-format')

    // A one-shot with one tool call in a fresh home: its cache also holds the turn's functions.
    server = await startMockServer({
      steps: [
        { toolCalls: [{ name: 'bash', arguments: { command: 'echo cached-turn', description: 'echo' } }] },
        { text: 'done' },
      ],
    })
    const oneShotHome = join(root, 'home-one-shot')
    // The home's own cache, not the suite's shared directory (cli-testkit's inheritedEnv).
    const env = {
      HOME: root,
      DSH_HOME: oneShotHome,
      DEEPSEEK_BASE_URL: server.baseURL,
      DEEPSEEK_API_KEY: 'sk-test',
      NODE_COMPILE_CACHE: undefined,
    }
    const run = await runDsh(['--profile', 'headless', 'run echo'], { cwd, env: { ...env, DSH_DEBUG: '1' } })
    expect(run.code, run.stderr).toBe(0)
    expect(run.stdout).toBe('done\n')
    expect(run.stderr).toContain('(code cache: absent)')

    const boot = stackCache(bootOnly)
    const oneShot = stackCache(oneShotHome)
    expect(oneShot.name).toBe(boot.name)
    // Written at app/ready only, both would hold the same boot (within a few KB); the turn's
    // functions add about a third (975 KB -> 1.29 MB when this was written).
    expect(oneShot.size).toBeGreaterThan(boot.size * 1.15)

    // The next start uses it.
    server.close()
    server = await startMockServer({ steps: [{ text: 'again' }] })
    const again = await runDsh(['--profile', 'headless', 'say again'], {
      cwd,
      env: { ...env, DEEPSEEK_BASE_URL: server.baseURL, DSH_DEBUG: '1' },
    })
    expect(again.code, again.stderr).toBe(0)
    expect(again.stdout).toBe('again\n')
    expect(again.stderr).toContain('(code cache: used)')
  })
})
