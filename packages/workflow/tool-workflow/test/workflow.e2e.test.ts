// Keyless end-to-end through the real `dsh` bin: a workflow spawns three children in parallel, one
// of them failing (its model request is refused); the run is logged as tool-workflow/* events in
// the stored session, folds back into a run record from the file alone, and the session resumes
// in a second process.
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, realpathSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { startMockServer, type MockServer } from '@dsh/llm-mock-server'
import { runDsh } from '@dsh/cli-testkit'
import type { SessionEvent } from '@dsh/session'
import { workflowRuns } from '../src/index.ts'

let server: MockServer | undefined
afterEach(async () => {
  await server?.close()
  server = undefined
})

function files(dir: string, name: string): string[] {
  return readdirSync(dir).flatMap((entry) => {
    const path = join(dir, entry)
    if (statSync(path).isDirectory()) return files(path, name)
    return entry === name ? [path] : []
  })
}

const SCRIPT = [
  'const parts = ["one", "two", "three"]',
  'const results = await Promise.all(parts.map((p) => agents.spawn({ prompt: `Check part ${p} and say what you found.`, description: `part ${p}` })))',
  'return results.map((r) => `${r.description}: ${r.status}`).sort()',
].join('\n')

describe('workflow end to end (dsh --profile headless with the workflow rows enabled)', () => {
  it('three children in parallel, one failing; the logged run folds back from the stored file; the session resumes', {
    timeout: 120_000,
  }, async () => {
    const root = realpathSync(mkdtempSync(join(tmpdir(), 'dsh-workflow-')))
    const home = join(root, 'home')
    const cwd = join(root, 'work')
    mkdirSync(cwd, { recursive: true })
    const patch = join(root, 'workflow.patch.yml')
    writeFileSync(
      patch,
      [
        '- id: workflow-engine',
        '  disabled: false',
        '- id: tool-workflow',
        '  disabled: false',
        '- id: session-persistence-jsonl',
        '  config:',
        '    compression: none',
        '    batchWindowMs: 20',
        '    unknownEventTypes: refuse',
        '',
      ].join('\n'),
    )
    server = await startMockServer({
      steps: [
        {
          expect: { tools: ['workflow'] },
          toolCalls: [{ id: 'c_wf', name: 'workflow', arguments: { script: SCRIPT, description: 'three parts' } }],
        },
        // The three children's first requests arrive in any order: two answer, one is refused.
        { text: 'part looks fine' },
        { error: { status: 400, message: 'this request is malformed' } },
        { text: 'part looks fine' },
        { text: 'two parts fine, one failed' },
        { text: 'resumed with the run in history' },
      ] as never,
    })
    const env = {
      DSH_HOME: home,
      HOME: home,
      DEEPSEEK_BASE_URL: server.baseURL,
      DEEPSEEK_API_KEY: 'sk-test-not-a-real-key',
    }
    const run = await runDsh(
      ['--profile', 'headless', '--patch', patch, '--output-format', 'stream-json', 'check the three parts'],
      { cwd, env },
    )
    expect(run.stderr).toBe('')
    expect(run.code).toBe(0)
    const lines = run.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l))
    const last = lines.at(-1)
    expect(last).toMatchObject({ type: 'result', result: 'two parts fine, one failed', reason: 'completed' })

    const events = lines
      .filter((l) => l.type === 'event')
      .map((l) => l.event as { type: string; data: Record<string, any> })
    const result = events.find((e) => e.type === 'tool/result' && e.data.message.callId === 'c_wf')!.data
    expect(result.error).toBeUndefined()
    const text = result.message.content[0].text as string
    expect(text).toMatch(/^Workflow wf-1 completed after [\d.]+ s; 3 children \(2 completed, 1 failed\)\./)
    expect(text).toContain('Return value:\n[\n  "part one: ')

    // The stored parent log alone rebuilds the run.
    const logs = files(join(home, 'sessions'), 'session.jsonl').map((file) =>
      readFileSync(file, 'utf8')
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l) as SessionEvent),
    )
    const parent = logs.find((log) => log.some((e) => e.type === 'tool-workflow/started'))!
    const [record] = workflowRuns(parent)
    expect(record).toMatchObject({
      runId: 'wf-1',
      callId: 'c_wf',
      tool: 'workflow',
      description: 'three parts',
      status: 'completed',
    })
    expect(record.children.map((c) => c.status).sort()).toEqual(['completed', 'completed', 'failed'])
    expect(record.children.map((c) => c.description).sort()).toEqual(['part one', 'part three', 'part two'])
    // Each child has its own stored session.
    expect(logs.filter((log) => log.some((e) => e.type === 'subagent/link'))).toHaveLength(3)

    const resumed = await runDsh(
      ['--profile', 'headless', '--patch', patch, '--resume', last.sessionId, '--output-format', 'json', 'and now?'],
      { cwd, env },
    )
    expect(resumed.stderr).toBe('')
    expect(resumed.code).toBe(0)
    expect(JSON.parse(resumed.stdout)).toMatchObject({
      sessionId: last.sessionId,
      result: 'resumed with the run in history',
    })
  })
})
