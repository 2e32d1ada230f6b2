// The dsh-badge skill through the real `dsh -p`, with @dsh/llm-mock-server as the model: the
// catalog in the system prompt names it, the skill tool returns the snippets and the packaged
// PNG, and the model's bash copy of that PNG into the project yields a valid 102x20 PNG.
import { mkdirSync, mkdtempSync, readFileSync, realpathSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it, vi } from 'vitest'
import { runDsh } from '@dsh/cli-testkit'
import { startMockServer, type MockServer } from '@dsh/llm-mock-server'
import { PNG, SKILL_DIR } from '../src/index.ts'

vi.setConfig({ testTimeout: 60_000 })

let server: MockServer | undefined
afterAll(async () => {
  await server?.close()
})

type Message = { role: string; content: unknown }
const messages = (s: MockServer, i: number) => (s.requests[i].body as { messages: Message[] }).messages

describe('@dsh/skill-badge', () => {
  it('offers dsh-badge, loads its snippets, and its PNG can be copied into a project', async () => {
    server = await startMockServer({
      steps: [
        { toolCalls: [{ name: 'skill', arguments: { name: 'dsh-badge' } }] },
        {
          toolCalls: [
            {
              name: 'bash',
              arguments: {
                command: `mkdir -p docs && cp '${join(SKILL_DIR, PNG)}' docs/`,
                description: 'copy the badge',
              },
            },
          ],
        },
        { text: 'Badge added.' },
      ] as never,
    })
    const root = realpathSync(mkdtempSync(join(tmpdir(), 'dsh-badge-')))
    mkdirSync(join(root, 'work'))
    writeFileSync(join(root, 'patch.yml'), '- insert:\n    - id: skill-badge\n      name: "@dsh/skill-badge"\n')
    const run = await runDsh(['-p', '--patch', join(root, 'patch.yml'), 'add a badge'], {
      cwd: join(root, 'work'),
      env: {
        DSH_HOME: join(root, 'home'),
        DEEPSEEK_BASE_URL: server.baseURL,
        DEEPSEEK_API_KEY: 'sk-test-not-a-real-key',
      },
    })
    expect(run, run.stderr).toMatchObject({ code: 0, stdout: 'Badge added.\n' })
    const system = JSON.stringify(messages(server, 0).filter((m) => m.role === 'system'))
    expect(system).toContain('dsh-badge')
    const loaded = JSON.stringify(messages(server, 1).at(-1)?.content)
    expect(loaded).toContain('https://img.shields.io/badge/powered%20by-dsh-006edc')
    expect(loaded).toContain(PNG)
    const png = readFileSync(join(root, 'work', 'docs', PNG))
    expect([...png.subarray(0, 8)]).toEqual([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])
    expect([png.readUInt32BE(16), png.readUInt32BE(20)]).toEqual([102, 20])
  })
})
