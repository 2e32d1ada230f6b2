// The README's opt-in: one `- insert:` row in a patch file mounts the session tools in the real
// `dsh` bin. A first one-shot stores a session; a second, with the patch, lets the scripted model
// search it by event, trace it and read the event, and the tool results reach the model.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it, vi } from 'vitest'
import { runDsh } from '@dsh/cli-testkit'
import { startMockServer } from '@dsh/llm-mock-server'

vi.setConfig({ testTimeout: 120_000 })

const root = mkdtempSync(join(tmpdir(), 'dsh-tsq-e2e-'))
afterAll(() => rmSync(root, { recursive: true, force: true }))

/** The tool messages of every chat request the mock received, in order. */
function toolMessages(requests: ReadonlyArray<{ body: unknown }>): string[] {
  return requests.flatMap((r) =>
    ((r.body as { messages?: Array<{ role: string; content: unknown }> }).messages ?? [])
      .filter((m) => m.role === 'tool')
      .map((m) => String(m.content)),
  )
}

describe('tool-session-query through a profile patch', () => {
  it('the README patch line mounts the tools; without it the model is not offered them', async () => {
    const env = { DSH_HOME: join(root, 'home'), DEEPSEEK_API_KEY: 'sk-test-not-a-real-key' }
    const first = await startMockServer({ steps: [{ text: 'Noted the zanzibar-quokka plan.' }] as never })
    try {
      const run = await runDsh(['-p', 'remember the zanzibar-quokka plan'], {
        cwd: root,
        env: { ...env, DEEPSEEK_BASE_URL: first.baseURL },
      })
      expect(run.stderr).toBe('')
      expect(run.code).toBe(0)
      // Without the patch the request offers no session_* tool (the package is opt-in).
      const tools = (first.requests[0].body as { tools?: Array<{ function: { name: string } }> }).tools ?? []
      expect(tools.map((t) => t.function.name).filter((n) => n.startsWith('session_'))).toEqual([])
    } finally {
      await first.close()
    }

    const patch = join(root, 'session-tools.patch.yml')
    writeFileSync(patch, '- insert:\n    - id: tool-session-query\n      name: "@dsh/tool-session-query"\n')
    const second = await startMockServer({
      steps: [
        { toolCalls: [{ id: 'a', name: 'session_event_search', arguments: { query: 'zanzibar-quokka plan' } }] },
        { text: 'Found it.' },
      ] as never,
    })
    try {
      const run = await runDsh(['-p', '--patch', patch, 'what did we plan?'], {
        cwd: root,
        env: { ...env, DEEPSEEK_BASE_URL: second.baseURL },
      })
      expect(run.stderr).toBe('')
      expect(run.code).toBe(0)
      const tools = (second.requests[0].body as { tools: Array<{ function: { name: string } }> }).tools
      expect(
        tools
          .map((t) => t.function.name)
          .filter((n) => n.startsWith('session_'))
          .sort(),
      ).toEqual([
        'session_event_read',
        'session_event_search',
        'session_event_trace',
        'session_read',
        'session_search',
        'session_trace',
      ])
      const [result] = toolMessages(second.requests)
      expect(result).toMatch(/event(s)? match:/)
      expect(result).toMatch(/#\d+ user\/message \(.*\): remember the \[zanzibar-quokka plan\]/)
    } finally {
      await second.close()
    }
  })
})
