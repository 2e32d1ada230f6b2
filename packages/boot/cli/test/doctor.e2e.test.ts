// `dsh doctor` through the real bin: one line per check, credentials by name only, the endpoint
// probed against the scripted model server (answers) and a closed port (does not: exit 1).
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { startMockServer, type MockServer } from '@dsh/llm-mock-server'
import { runDsh } from '@dsh/cli-testkit'

let mock: MockServer
beforeAll(async () => {
  mock = await startMockServer({ steps: [] } as never)
})
afterAll(async () => mock?.close())

/** A loopback port nothing listens on: bound, then closed. */
async function closedPort(): Promise<number> {
  const server = createServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as { port: number }
  await new Promise((resolve) => server.close(resolve))
  return port
}

function setup() {
  const root = mkdtempSync(join(tmpdir(), 'dsh-doctor-e2e-'))
  const home = join(root, 'home')
  mkdirSync(home, { recursive: true })
  return { root, home }
}

type Check = { name: string; status: string; detail: string; fix?: string; needed: boolean }

it('reports every check, names credentials without values, and the endpoint answers', async () => {
  const { root, home } = setup()
  const run = await runDsh(['doctor', '--json'], {
    cwd: root,
    env: { DSH_HOME: home, DEEPSEEK_BASE_URL: mock.baseURL, DEEPSEEK_API_KEY: 'sk-doctor-secret' },
  })
  expect(run.stdout).not.toContain('sk-doctor-secret')
  const report = JSON.parse(run.stdout) as { ok: boolean; checks: Check[] }
  const by = Object.fromEntries(report.checks.map((c) => [c.name, c]))
  expect(Object.keys(by).sort()).toEqual([
    'config',
    'credentials',
    'disk',
    'endpoint',
    'git',
    'node',
    'pty',
    'ripgrep',
    'sandbox',
    'sqlite',
  ])
  expect(by.credentials).toMatchObject({ status: 'ok', detail: 'set: DEEPSEEK_API_KEY (the environment)' })
  expect(by.endpoint.status).toBe('ok')
  expect(by.endpoint.detail).toMatch(/answers \(GET \/models: HTTP 200/)
  expect(mock.requests.some((r) => r.method === 'GET' && r.path.endsWith('/models'))).toBe(true)
  expect(by.config.status).toBe('ok')
  expect(by.node.status).toBe('ok')
  expect(by.disk.detail).toContain(`free under ${home}`)
  // This machine has bwrap: the runner is named with what it confines.
  expect(by.sandbox.detail).toMatch(/^(bwrap|landlock) confines /)
  expect(run.code, run.stderr).toBe(report.ok ? 0 : 1)
}, 30_000)

it('a closed endpoint, no credential and a bad settings value are FAIL lines with a fix, exit 1', async () => {
  const { root, home } = setup()
  writeFileSync(join(home, 'settings.yaml'), 'permissions:\n  default: yolo\n')
  const port = await closedPort()
  const run = await runDsh(['doctor'], {
    cwd: root,
    env: { DSH_HOME: home, DEEPSEEK_BASE_URL: `http://127.0.0.1:${port}` },
  })
  expect(run.code).toBe(1)
  const lines = run.stdout.trim().split('\n')
  expect(lines.find((l) => l.startsWith('FAIL endpoint:'))).toMatch(
    new RegExp(`http://127\\.0\\.0\\.1:${port} does not answer \\(ECONNREFUSED\\) -> fix: `),
  )
  expect(lines.find((l) => l.startsWith('FAIL credentials:'))).toContain('-> fix: run "dsh" in a terminal')
  expect(lines.find((l) => l.startsWith('FAIL config:'))).toContain('permissions.default: "yolo" is not valid')
  expect(lines.at(-1)).toBe('dsh doctor: something needed is missing (FAIL lines above)')
}, 30_000)

it('usage: --help exits 0, an unknown argument exits 2', async () => {
  const { root, home } = setup()
  const help = await runDsh(['doctor', '--help'], { cwd: root, env: { DSH_HOME: home } })
  expect(help.code).toBe(0)
  expect(help.stdout).toContain('Usage: dsh doctor [--json]')
  const bad = await runDsh(['doctor', '--jsn'], { cwd: root, env: { DSH_HOME: home } })
  expect(bad).toMatchObject({
    code: 2,
    stderr: 'dsh: doctor: unexpected argument "--jsn"\ndsh: see "dsh doctor --help"\n',
  })
})

it('a native add-on that is missing or does not load is a warn line saying what is off and how to fix it', async () => {
  // A plain JavaScript module of the launcher (no type declarations), loaded by its URL.
  const url = new URL('../src/commands/doctor.mjs', import.meta.url).href
  const { checkAddon } = (await import(/* @vite-ignore */ url)) as {
    checkAddon: (
      name: string,
      chain: string[],
      addon: string,
      exercise: (m: unknown) => void,
      off: string,
      base: string,
    ) => { status: string; detail: string; fix?: string }
  }
  const base = fileURLToPath(new URL('../package.json', import.meta.url))
  const missing = checkAddon('sqlite', [], 'dsh-no-such-native-addon', () => {}, 'session search is off', base)
  expect(missing).toMatchObject({
    status: 'warn',
    detail: 'dsh-no-such-native-addon is not installed: session search is off',
  })
  expect(missing.fix).toMatch(/C\+\+ compiler.*npm rebuild dsh-no-such-native-addon.*npm_config_nodedir/)
  // Installed but its compiled part fails (as a binding built for another Node does).
  const broken = checkAddon(
    'pty',
    [],
    'yaml',
    () => {
      throw new Error('The module was compiled against a different Node.js version')
    },
    'terminals are off',
    base,
  )
  expect(broken).toMatchObject({
    status: 'warn',
    detail: 'yaml does not load (The module was compiled against a different Node.js version): terminals are off',
  })
})
