// The tool's system prompt section: present in what the model receives while the tool is loaded,
// gone once the tool plugin is unloaded.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { promptAcrossUnload } from '@dsh/agent-loop-testkit'
import LocalFileSystem from '@dsh/fs-local'
import * as Policy from '@dsh/fs-observation-policy'
import * as Tool from '../src/index.ts'

let dir: string | undefined
afterEach(() => {
  if (dir) rmSync(dir, { recursive: true, force: true })
  dir = undefined
})

describe('system prompt section', () => {
  it('is in the system prompt while the tool is loaded and removed with the tool plugin', async () => {
    dir = mkdtempSync(join(tmpdir(), 'dsh-prompt-section-'))
    const { loaded, unloaded } = await promptAcrossUnload(Tool, {
      cwd: dir,
      plugins: [
        [LocalFileSystem, {}],
        [Policy, {}],
      ],
    })
    expect(loaded).toContain('Files (read, write, edit):')
    expect(loaded).toContain(Tool.PROMPT_SECTION.text)
    expect(loaded.indexOf(Tool.PROMPT_SECTION.text)).toBeLessThan(loaded.indexOf('Environment:'))
    expect(unloaded).not.toContain('Files (read, write, edit):')
    expect(unloaded).toContain('Environment:')
  })
})
