// rg is started by the harness, whose /proc shows every process of the user, dsh's own environment
// (the API key) among them. In a confining mode the search root must not be such an entry, and a
// walk must not reach one: rg runs in the session's sandbox (private /proc), or, without a sandbox
// provider, skips the per-process entries.
import { mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync } from 'node:fs'
import { spawn, type ChildProcess } from 'node:child_process'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, afterEach, beforeAll, expect, it } from 'vitest'
import { createHarness, type Harness } from '@dsh/agent-loop-testkit'
import type { ToolResultPayload } from '@dsh/tools'
import LocalSubprocess from '@dsh/subprocess-local'
import SandboxPolicyService from '@dsh/sandbox-policy'
import LocalSandbox from '@dsh/sandbox-local'
import * as Search from '../src/index.ts'

const PLANTED = 'sk-planted-search-9876543210'
let harness: Harness | undefined
let dir: string
let ws: string
let child: ChildProcess

beforeAll(async () => {
  dir = realpathSync(mkdtempSync(join(tmpdir(), 'dsh-search-proc-')))
  ws = join(dir, 'ws')
  mkdirSync(ws)
  // A process outside the sandbox whose environment holds a key, as dsh's own does.
  child = spawn('sleep', ['600'], { env: { PATH: process.env.PATH, DEEPSEEK_API_KEY: PLANTED }, stdio: 'ignore' })
  await new Promise((resolve) => child.once('spawn', resolve))
  symlinkSync(`/proc/${child.pid}`, join(ws, 'proc-dir'))
})
afterEach(async () => {
  await harness?.dispose()
  harness = undefined
})
afterAll(() => {
  child?.kill('SIGKILL')
  rmSync(dir, { recursive: true, force: true })
})

const text = (r: ToolResultPayload) => r.message.content.map((b) => (b.type === 'text' ? b.text : '')).join('')

async function setup(mode: 'workspace-write' | 'read-only' | 'danger-full-access', sandbox: boolean) {
  harness = await createHarness({
    cwd: ws,
    plugins: [
      [LocalSubprocess, {}],
      [SandboxPolicyService, { defaultMode: mode, tempDirs: [] }],
      ...(sandbox ? [[LocalSandbox, { probeCache: false }] as [typeof LocalSandbox, object]] : []),
      [Search, { hidden: true }],
    ],
  })
  return (name: string, args: object) =>
    harness!.ctx.tools.execute({ callId: `c${Math.random()}`, name, arguments: JSON.stringify(args) }, { cwd: ws })
}

it('refuses a per-process /proc entry as the search root, directly or through a link', async () => {
  const call = await setup('workspace-write', false)
  for (const path of [`/proc/${child.pid}/environ`, `/proc/${child.pid}`, '/proc/self/environ', join(ws, 'proc-dir')]) {
    const result = await call('grep', { pattern: 'sk-planted', path })
    expect(text(result), path).toMatch(/^Error \[SANDBOX_DENIED\]: the sandbox refused to search/)
    expect(text(result)).not.toContain(PLANTED)
  }
  const glob = await call('glob', { pattern: '*', path: `/proc/${child.pid}/fd` })
  expect(text(glob)).toMatch(/SANDBOX_DENIED/)
})

it("a walk of /proc in the sandbox sees only the sandbox's own processes", async () => {
  const call = await setup('workspace-write', true)
  const grep = await call('grep', { pattern: 'sk-planted', path: '/proc', include: 'environ' })
  expect(text(grep)).not.toContain(PLANTED)
  expect(text(grep)).toMatch(/No matches/)
  // rg ran confined: the environ files it lists are those of the sandbox's few processes.
  const listed = await call('glob', { pattern: 'environ', path: '/proc' })
  const pids = [...text(listed).matchAll(/^\/proc\/(\d+)\/environ$/gm)].map((m) => Number(m[1]))
  expect(pids.length, text(listed)).toBeGreaterThan(0)
  expect(pids.length).toBeLessThan(6)
  expect(pids).not.toContain(child.pid)
  expect(pids).not.toContain(process.pid)
})

it('a walk of /proc without a sandbox provider skips the per-process entries', async () => {
  const call = await setup('read-only', false)
  const result = await call('grep', { pattern: 'sk-planted', path: '/proc', include: 'environ' })
  expect(text(result)).not.toContain(PLANTED)
  expect(text(result)).toMatch(/No matches/)
})

it('danger-full-access has no sandbox: the search reads what the user can', async () => {
  const call = await setup('danger-full-access', true)
  expect(text(await call('grep', { pattern: 'sk-planted', path: `/proc/${child.pid}/environ` }))).toMatch(
    /^Found 1 matching line/,
  )
})
