// End-to-end: the real `dsh --profile headless` bin (the base bundle's skill rows) finds a
// Claude Code skill in the project, lists it in the system prompt, and the model loads it.
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { startMockServer, type MockServer } from '@dsh/llm-mock-server'
import { runDsh } from '@dsh/cli-testkit'

let server: MockServer | undefined
afterEach(async () => {
  await server?.close()
  server = undefined
})

describe('dsh --profile headless with project skills', () => {
  it('lists the skill, loads it with the skill tool, and skips a malformed one', { timeout: 60_000 }, async () => {
    const root = mkdtempSync(join(tmpdir(), 'dsh-e2e-skill-'))
    const cwd = join(root, 'project')
    mkdirSync(join(cwd, '.claude/skills/changelog'), { recursive: true })
    writeFileSync(
      join(cwd, '.claude/skills/changelog/SKILL.md'),
      '---\nname: changelog\ndescription: Write the changelog entry for a change.\n---\nAdd one line under "Unreleased".\n',
    )
    mkdirSync(join(cwd, '.agents/skills/broken'), { recursive: true })
    writeFileSync(join(cwd, '.agents/skills/broken/SKILL.md'), 'no front matter here')
    server = await startMockServer({
      steps: [{ toolCalls: [{ id: 'c1', name: 'skill', arguments: { name: 'changelog' } }] }, { text: 'ok' }] as never,
    })
    const run = await runDsh(['--profile', 'headless', 'write the changelog'], {
      cwd,
      env: { DSH_HOME: join(root, 'home'), DEEPSEEK_BASE_URL: server.baseURL, DEEPSEEK_API_KEY: 'x' },
    })
    expect(run.code).toBe(0)
    expect(run.stdout.trim()).toBe('ok')
    const first = server.requests[0].body as {
      messages: { role: string; content: string }[]
      tools: { function: { name: string } }[]
    }
    expect(first.messages[0].content).toContain('- changelog: Write the changelog entry for a change.')
    expect(first.messages[0].content).not.toContain('broken')
    expect(first.tools.map((t) => t.function.name)).toContain('skill')
    const second = server.requests[1].body as { messages: { role: string; content: string }[] }
    expect(second.messages.filter((m) => m.role === 'tool').at(-1)!.content).toContain(
      'Add one line under "Unreleased".',
    )
  })
})
