// rg runs outside the sandbox, so the search tools themselves keep away from what the sandbox
// hides (dsh's credential files): a direct target is refused, a directory search skips them.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, expect, it } from 'vitest'
import { createHarness, type Harness } from '@dsh/agent-loop-testkit'
import type { ToolResultPayload } from '@dsh/tools'
import LocalSubprocess from '@dsh/subprocess-local'
import SandboxPolicyService from '@dsh/sandbox-policy'
import * as Search from '../src/index.ts'

let harness: Harness | undefined
let dir: string | undefined
afterEach(async () => {
  await harness?.dispose()
  if (dir) rmSync(dir, { recursive: true, force: true })
  harness = dir = undefined
})

const text = (r: ToolResultPayload) => r.message.content.map((b) => (b.type === 'text' ? b.text : '')).join('')

async function setup(mode: 'workspace-write' | 'danger-full-access') {
  dir = mkdtempSync(join(tmpdir(), 'dsh-search-hidden-'))
  const home = join(dir, 'home')
  const ws = join(dir, 'ws')
  mkdirSync(home)
  mkdirSync(ws)
  writeFileSync(join(home, '.credentials.yaml'), 'DEEPSEEK_API_KEY: sk-secret-value\n')
  writeFileSync(join(home, 'notes.txt'), 'sk-not-a-secret\n')
  harness = await createHarness({
    cwd: ws,
    plugins: [
      [LocalSubprocess, {}],
      [SandboxPolicyService, { defaultMode: mode, hiddenPaths: [join(home, '.credentials.yaml')] }],
      [Search, { hidden: true }],
    ],
  })
  const call = (name: string, args: object) =>
    harness!.ctx.tools.execute({ callId: `c${Math.random()}`, name, arguments: JSON.stringify(args) }, { cwd: ws })
  return { home, call }
}

it('refuses a hidden file as the target and skips it inside a searched directory', async () => {
  const { home, call } = await setup('workspace-write')
  const direct = await call('grep', { pattern: 'sk-', path: join(home, '.credentials.yaml') })
  expect(text(direct)).toMatch(/SANDBOX_DENIED/)
  expect(text(direct)).not.toContain('sk-secret-value')
  const tree = await call('grep', { pattern: 'sk-', path: home })
  expect(text(tree)).toContain('sk-not-a-secret')
  expect(text(tree)).not.toContain('sk-secret-value')
  const files = await call('glob', { pattern: '*', path: home })
  expect(text(files)).toContain('notes.txt')
  expect(text(files)).not.toContain('.credentials.yaml')
})

it('danger-full-access hides nothing', async () => {
  const { home, call } = await setup('danger-full-access')
  expect(text(await call('grep', { pattern: 'sk-', path: join(home, '.credentials.yaml') }))).toContain(
    'sk-secret-value',
  )
})
