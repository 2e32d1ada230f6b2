// End-to-end: workflow children in the e2b world (`agents.spawn({..., world: "e2b"})`), through the
// real bin with the workflow rows enabled, the stand-in and the mock model. Each child works in a
// sandbox of its own, killed when it ends with its change saved as its own patch; a spawn asking
// for a world the run does not have is refused with one sentence.
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startMockServer, type MockServer } from '@dsh/llm-mock-server'
import { runDsh } from '@dsh/cli-testkit'
import { startE2bStandin, type E2bStandin } from '@dsh/e2b-standin'

let standin: E2bStandin
let server: MockServer
beforeAll(async () => {
  standin = await startE2bStandin()
})
afterAll(async () => {
  await server?.close()
  await standin.close()
})

const SCRIPT = [
  // A world this run does not have: the spawn throws one sentence (the script catches it).
  'const refused = await agents.spawn({ prompt: "never", world: "mars" }).then(() => "spawned", (e) => e.message)',
  'const results = await Promise.all(["one", "two"].map((part) => agents.spawn({ prompt: `do part ${part}`, description: `part ${part}`, world: "e2b" })))',
  'return [refused, ...results.map((r) => `${r.description}: ${r.status}`).sort()]',
].join('\n')

describe('workflow children with world: "e2b"', () => {
  it('each child runs in its own sandbox, killed at its end; an unknown world is refused', async () => {
    const cwd = mkdtempSync(join(tmpdir(), 'dsh-e2b-workflow-'))
    writeFileSync(join(cwd, '.gitignore'), 'home/\nworkflow.patch.yml\n')
    writeFileSync(join(cwd, 'README'), 'shared input\n')
    writeFileSync(
      join(cwd, 'workflow.patch.yml'),
      ['- id: workflow-engine', '  disabled: false', '- id: tool-workflow', '  disabled: false', ''].join('\n'),
    )
    const home = join(cwd, 'home')
    server = await startMockServer({
      steps: [
        { toolCalls: [{ id: 'c_wf', name: 'workflow', arguments: { script: SCRIPT, description: 'parts' } }] },
        // The two e2b children's first requests (in any order): the same command.
        ...[1, 2].map(() => ({
          toolCalls: [{ name: 'bash', arguments: { command: 'cat README > out.txt; echo ok', description: 'work' } }],
        })),
        ...[1, 2].map(() => ({ text: 'part done' })),
        { text: 'Workflow done.' },
      ] as never,
    })
    const mark = standin.requests.length
    const run = await runDsh(
      ['-p', '--world', 'e2b', '--patch', 'workflow.patch.yml', '--output-format', 'stream-json', 'run the parts'],
      {
        cwd,
        env: {
          DSH_HOME: home,
          DEEPSEEK_BASE_URL: server.baseURL,
          DEEPSEEK_API_KEY: 'sk-test-not-a-real-key',
          ...standin.env,
        },
        timeoutMs: 120_000,
      },
    )
    expect(run.code, run.stderr).toBe(0)
    const lines = run.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l))
    expect(lines.at(-1)).toMatchObject({ type: 'result', result: 'Workflow done.' })
    const result = lines.find(
      (l) => l.type === 'event' && l.event.type === 'tool/result' && l.event.data.message.callId === 'c_wf',
    ).event.data.message
    const text = result.content[0].text as string
    expect(text, text).toContain('"part one: completed"')
    expect(text).toContain('"part two: completed"')
    expect(text).toMatch(/unknown world \\"mars\\"; available: e2b; leave world out to run the child in yours/)

    const mine = standin.requests.slice(mark)
    // Every sandbox the run created (one per e2b child, and the run's own) is killed by its end.
    const created = mine.filter((r) => r.method === 'POST' && r.path === '/sandboxes').map((r) => r.sandboxId)
    const killed = mine.filter((r) => r.method === 'DELETE').map((r) => r.path.split('/').pop())
    expect(killed.sort()).toEqual([...created].sort())
    for (const id of created) expect(standin.get(id as string)).toBeUndefined()
    // Each child's change is its own patch, named on stderr; the local tree is untouched.
    const saved = [
      ...run.stderr.matchAll(
        /the E2B sandbox (\S+) of subagent (sub-\d+) changed the workspace; patch saved to (\S+) /g,
      ),
    ]
    // One sandbox of its own per child: two different machines, both among those created.
    const children = new Set(saved.map((m) => m[1]))
    expect(children.size).toBe(2)
    expect(new Set(saved.map((m) => m[2])).size).toBe(2)
    for (const id of children) expect(created).toContain(id)
    // Exactly three machines: the two children's, and the run's own, which the workflow program
    // itself runs in (code-runtime-subprocess spawns `node -e` through ctx.subprocess, the run's
    // sandbox in this world: the model's program is confined there, never on this machine). It is
    // created first: the program that spawns the children runs in it.
    expect(created).toHaveLength(3)
    const own = created.filter((id) => !children.has(id as string))
    expect(own).toHaveLength(1)
    expect(created[0]).toBe(own[0])
    for (const m of saved) expect(readFileSync(m[3], 'utf8')).toContain('+shared input')
    expect(existsSync(join(cwd, 'out.txt'))).toBe(false)
  }, 120_000)
})
