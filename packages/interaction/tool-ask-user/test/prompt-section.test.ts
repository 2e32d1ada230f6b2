// The tool's system prompt section: present in what the model receives while the tool is loaded,
// gone once the tool plugin is unloaded.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { createHarness, type Harness } from '@dsh/agent-loop-testkit'
import UserQuestionsService from '@dsh/user-questions'
import * as Tool from '../src/index.ts'

let harness: Harness | undefined
let dir: string | undefined
afterEach(async () => {
  await harness?.dispose()
  harness = undefined
  if (dir) rmSync(dir, { recursive: true, force: true })
  dir = undefined
})

describe('system prompt section', () => {
  it('is in the system prompt while the tool is loaded and removed with the tool plugin', async () => {
    dir = mkdtempSync(join(tmpdir(), 'dsh-prompt-section-'))
    harness = await createHarness({ cwd: dir, script: [{ text: 'one' }, { text: 'two' }], plugins: [[UserQuestionsService]] })
    const tool = await harness.mount(Tool, {})
    await harness.prompt('first')
    const first = harness.model.requests[0].system ?? ''
    expect(first).toContain('Questions (ask_user_question):')
    expect(first).toContain(Tool.PROMPT_SECTION.text)
    expect(first.indexOf(Tool.PROMPT_SECTION.text)).toBeLessThan(first.indexOf('Environment:'))
    await tool.dispose()
    await harness.prompt('second')
    const second = harness.model.requests[1].system ?? ''
    expect(second).not.toContain('Questions (ask_user_question):')
    expect(second).toContain('Environment:')
  })
})
