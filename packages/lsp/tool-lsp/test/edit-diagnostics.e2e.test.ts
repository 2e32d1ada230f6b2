// The base profile's language servers through the real `dsh -p` bin, with the mock model: the
// real typescript-language-server (found in the project's node_modules/.bin) and pyright (found on
// PATH), started on the first edit of one of their files, confined by the sandbox like bash. An
// edit that breaks a type gets the server's error in its own tool result; a correct edit gets
// none; the lsp tool answers from the same server; a TypeScript file whose project has no server
// installed gets no diagnostics and no error line; and no server outlives dsh.
import {
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs'
import { spawn } from 'node:child_process'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { startMockServer, type MockServer } from '@dsh/llm-mock-server'
import { DSH_BIN, runDsh, type DshRun } from '@dsh/cli-testkit'

const require = createRequire(import.meta.url)
const tsls = join(dirname(require.resolve('typescript-language-server/package.json')), 'lib/cli.mjs')
const typescript = dirname(require.resolve('typescript/package.json'))
const pyright = join(dirname(require.resolve('pyright/package.json')), 'langserver.index.js')

let mock: MockServer | undefined
let stalling: MockServer | undefined
let root = ''
let run: DshRun
let results: string[] = []

/** Command lines of live processes that mention `text` (the servers carry the project path). */
function processesMentioning(text: string): string[] {
  const found: string[] = []
  for (const pid of readdirSync('/proc')) {
    if (!/^\d+$/.test(pid)) continue
    try {
      const cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ')
      if (cmdline.includes(text)) found.push(`${pid}: ${cmdline}`)
    } catch {
      // gone meanwhile
    }
  }
  return found
}

const MAIN_OK = "import { add } from './math'\n\nexport const total: number = add(1, 2)\n"

beforeAll(async () => {
  root = realpathSync(mkdtempSync(join(tmpdir(), 'dsh-lsp-e2e-')))
  // A TypeScript project with typescript and its language server installed locally.
  const ts = join(root, 'web')
  mkdirSync(join(ts, 'src'), { recursive: true })
  mkdirSync(join(ts, 'node_modules/.bin'), { recursive: true })
  symlinkSync(typescript, join(ts, 'node_modules/typescript'))
  symlinkSync(tsls, join(ts, 'node_modules/.bin/typescript-language-server'))
  writeFileSync(join(ts, 'package.json'), '{"name": "web", "private": true}\n')
  writeFileSync(
    join(ts, 'tsconfig.json'),
    JSON.stringify({ compilerOptions: { strict: true, module: 'esnext', moduleResolution: 'bundler', noEmit: true } }),
  )
  writeFileSync(join(ts, 'src/math.ts'), 'export function add(a: number, b: number): number {\n  return a + b\n}\n')
  writeFileSync(join(ts, 'src/main.ts'), MAIN_OK)
  // A TypeScript project without a language server: no diagnostics, no error.
  mkdirSync(join(root, 'bare'))
  writeFileSync(join(root, 'bare/package.json'), '{"name": "bare", "private": true}\n')
  // A Python project; pyright-langserver is on PATH.
  mkdirSync(join(root, 'py'))
  writeFileSync(join(root, 'py/pyproject.toml'), '[project]\nname = "py"\nversion = "0.1.0"\n')
  mkdirSync(join(root, 'bin'))
  symlinkSync(pyright, join(root, 'bin/pyright-langserver'))

  // This shared 2-core machine can take longer than the default 15 s to start a server under load.
  mkdirSync(join(root, '.home'))
  writeFileSync(join(root, '.home/cordis.patch.yml'), '- id: tool-lsp\n  config:\n    diagnosticsTimeoutMs: 90000\n')
  const edit = (id: string, old_string: string, new_string: string) => ({
    id,
    name: 'edit',
    arguments: { file_path: 'web/src/main.ts', old_string, new_string },
  })
  mock = await startMockServer({
    steps: [
      { toolCalls: [{ id: 'c0', name: 'read', arguments: { file_path: 'web/src/main.ts' } }] },
      { toolCalls: [edit('c1', 'total: number', 'total: string')] },
      { toolCalls: [edit('c2', 'total: string = add(1, 2)', 'total: number = add(1, 2) + 1')] },
      {
        toolCalls: [
          {
            id: 'c3',
            name: 'lsp',
            arguments: { operation: 'definition', file_path: 'web/src/main.ts', line: 3, column: 30 },
          },
        ],
      },
      {
        toolCalls: [
          { id: 'c4', name: 'write', arguments: { file_path: 'py/app.py', content: 'count: int = "three"\n' } },
        ],
      },
      {
        toolCalls: [
          {
            id: 'c5',
            name: 'write',
            arguments: { file_path: 'bare/x.ts', content: 'export const n: number = "one"\n' },
          },
        ],
      },
      {
        toolCalls: [{ id: 'c6', name: 'lsp', arguments: { operation: 'document_symbols', file_path: 'bare/x.ts' } }],
      },
      { text: 'Done.' },
    ] as never,
  })
  run = await runDsh(['-p', 'make the edits'], {
    cwd: root,
    env: {
      DSH_HOME: join(root, '.home'),
      DEEPSEEK_BASE_URL: mock.baseURL,
      DEEPSEEK_API_KEY: 'sk-test-not-a-real-key',
      PATH: `${join(root, 'bin')}:${dirname(process.execPath)}:/usr/local/bin:/usr/bin:/bin`,
    },
    timeoutMs: 120_000,
  })
  results = mock.requests.slice(2).map((r) => JSON.stringify((r.body as { messages: unknown[] }).messages.at(-1)))
}, 150_000)

afterAll(async () => {
  await mock?.close()
  await stalling?.close()
  if (root && !process.env.KEEP) rmSync(root, { recursive: true, force: true })
})

it('runs the whole script', () => {
  expect(run, run.stderr).toMatchObject({ code: 0, stdout: 'Done.\n' })
  expect(results).toHaveLength(6)
})

it("an edit that breaks a type shows the server's error in the edit's own result", () => {
  expect(results[0]).toContain('The language server reports 1 error in web/src/main.ts after this change')
  expect(results[0]).toMatch(/web\/src\/main\.ts:3:14 error TS2322: Type 'number' is not assignable to type 'string'/)
})

it('a correct edit gets no diagnostics (the positive control)', () => {
  expect(results[1]).toContain('main.ts')
  expect(results[1]).not.toContain('language server')
})

it('the lsp tool answers from the same server', () => {
  expect(results[2]).toContain('web/src/math.ts:1:17: export function add(a: number, b: number): number {')
})

it("pyright on PATH reports a Python file's type error", () => {
  expect(results[3]).toContain('The language server reports 1 error in py/app.py after this change')
  expect(results[3]).toMatch(
    /py\/app\.py:1:14 error reportAssignmentType: Type .*'three'.* is not assignable to declared type .*int/,
  )
})

it('a project without an installed server gets no diagnostics and no error line', () => {
  expect(results[4]).toContain('x.ts')
  expect(results[4]).not.toContain('language server')
  expect(run.stderr).not.toMatch(/lsp|language server/i)
  expect(results[5]).toContain('[NO_LANGUAGE_SERVER]: no language server is configured or installed for bare/x.ts')
})

/** Waits until no live process mentions `text` (bounded), and returns what is left. */
async function gone(text: string): Promise<string[]> {
  const deadline = Date.now() + 10_000
  let left = processesMentioning(text)
  while (left.length > 0 && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 100))
    left = processesMentioning(text)
  }
  return left
}

it('no language server outlives dsh', async () => {
  expect(await gone(root)).toEqual([])
})

// Several mechanisms end a server with dsh: bwrap's --die-with-parent, the server's own exit on
// stdin EOF, and the subprocess seam's watchdog; this checks the outcome, not one of them.
it('no language server outlives a SIGKILLed dsh', async () => {
  // The model edits (which starts the TypeScript server), then stalls; dsh is killed hard.
  stalling = await startMockServer({
    steps: [
      { toolCalls: [{ id: 'k0', name: 'read', arguments: { file_path: 'web/src/main.ts' } }] },
      { events: [{ stall: true }] },
    ] as never,
  })
  const child = spawn(process.execPath, [DSH_BIN, '-p', 'then stall'], {
    cwd: root,
    env: {
      PATH: `${dirname(process.execPath)}:/usr/bin:/bin`,
      HOME: process.env.HOME,
      DSH_HOME: join(root, '.home'),
      DEEPSEEK_BASE_URL: stalling.baseURL,
      DEEPSEEK_API_KEY: 'sk-test-not-a-real-key',
    },
    stdio: ['ignore', 'ignore', 'ignore'],
  })
  const exited = new Promise((resolve) => child.on('exit', resolve))
  // The read warms the server; wait until it is running, then kill dsh without a chance to clean up.
  const deadline = Date.now() + 60_000
  const server = () => processesMentioning('typescript-language-server').filter((p) => p.includes(root))
  while ((stalling.requests.length < 2 || server().length === 0) && Date.now() < deadline)
    await new Promise((resolve) => setTimeout(resolve, 50))
  expect(server().length).toBeGreaterThan(0)
  child.kill('SIGKILL')
  await exited
  expect(await gone(root)).toEqual([])
}, 90_000)
