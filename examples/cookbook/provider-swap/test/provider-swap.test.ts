// The provider-swap recipe under the real bash tool: the model's command is answered by the dry-run
// executor and nothing runs (the file the command would create never appears).
import { existsSync, mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, expect, it } from 'vitest'
import { createHarness, type Harness } from '@dsh/agent-loop-testkit'
import * as toolBash from '@dsh/tool-bash'
import DryRunShell from '../index.ts'

let harness: Harness | undefined
afterEach(async () => harness?.dispose())

it('the bash tool runs on the swapped ctx.shell: the model sees the dry-run answer, nothing executes', async () => {
  const cwd = mkdtempSync(join(tmpdir(), 'cookbook-dry-'))
  harness = await createHarness({
    cwd,
    plugins: [
      [DryRunShell, { banner: 'DRY:' }],
      [toolBash, {}],
    ],
    script: [
      { toolCalls: [{ name: 'bash', arguments: { command: 'touch created.txt', description: 'create a file' } }] },
      { text: 'done' },
    ],
  })
  await harness.prompt('create a file')
  const toolResult = JSON.stringify(harness.model.requests[1].messages.at(-1))
  expect(toolResult).toContain('DRY: touch created.txt')
  expect(toolResult).toContain('nothing was executed')
  expect(existsSync(join(cwd, 'created.txt'))).toBe(false)
  expect((harness.ctx.shell as DryRunShell).seen).toEqual(['touch created.txt'])
})

it('a bad working directory is a ShellError the model can act on', async () => {
  const cwd = mkdtempSync(join(tmpdir(), 'cookbook-dry-'))
  harness = await createHarness({
    cwd,
    plugins: [
      [DryRunShell, {}],
      [toolBash, {}],
    ],
    script: [
      { toolCalls: [{ name: 'bash', arguments: { command: 'ls', workdir: 'missing', description: 'list' } }] },
      { text: 'done' },
    ],
  })
  await harness.prompt('list')
  expect(JSON.stringify(harness.model.requests[1].messages.at(-1))).toContain('does not exist')
})
