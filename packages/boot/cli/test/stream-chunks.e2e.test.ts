// The one-shot profile releases a finished step's streamed deltas from memory (`streamChunks:
// release` on the session row): through the real bin and the scripted model, the stored log still
// holds every delta whole, and the session resumes with the answer the deltas made.
import { mkdirSync, mkdtempSync, readFileSync, readdirSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, expect, it } from 'vitest'
import { startMockServer, type MockServer } from '@dsh/llm-mock-server'
import { runDsh } from '@dsh/cli-testkit'
import { loadZstd, scanZstd } from '@dsh/session-persistence-jsonl'

const mocks: MockServer[] = []
afterAll(async () => {
  for (const m of mocks.splice(0)) await m.close()
})

function find(dir: string, name: string): string[] {
  const out: string[] = []
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name)
    if (entry.isDirectory()) out.push(...find(path, name))
    else if (entry.name === name) out.push(path)
  }
  return out
}

it('a one-shot stores every streamed delta whole and resumes from its log', async () => {
  const m = await startMockServer({
    steps: [{ events: [{ text: 'The ' }, { text: 'answer ' }, { text: 'is 42.' }] }, { text: 'Still 42.' }],
  } as never)
  mocks.push(m)
  const root = mkdtempSync(join(tmpdir(), 'dsh-stream-chunks-e2e-'))
  const home = join(root, 'home')
  mkdirSync(home, { recursive: true })
  const env = { DSH_HOME: home, DEEPSEEK_BASE_URL: m.baseURL, DEEPSEEK_API_KEY: 'sk-test-not-a-real-key' }

  const dump = await runDsh(['--profile', 'headless', '--dump-config'], { cwd: root, env })
  expect(dump.stdout).toMatch(/- id: session\n\s+name: "@dsh\/session"\n\s+config:\n\s+streamChunks: release/)

  const first = await runDsh(['-p', 'what is the answer?'], { cwd: root, env })
  expect(first, first.stderr).toMatchObject({ code: 0, stdout: 'The answer is 42.\n' })

  const [log] = find(join(home, 'sessions'), 'session.jsonl.zstd')
  const scan = scanZstd(readFileSync(log), await loadZstd())
  expect(scan.torn).toBeUndefined()
  const deltas = scan.records
    .map((r) => r.event)
    .filter((e) => e.type === 'assistant/chunk')
    .map((e) => (e.data as { chunk: { kind: string; text?: string } }).chunk)
    .filter((c) => c.kind === 'text-delta')
    .map((c) => c.text)
  expect(deltas).toEqual(['The ', 'answer ', 'is 42.'])
  expect(scan.records.some((r) => JSON.stringify(r.event.data).includes('"released"'))).toBe(false)

  const again = await runDsh(['-c', '-p', 'are you sure?'], { cwd: root, env })
  expect(again, again.stderr).toMatchObject({ code: 0, stdout: 'Still 42.\n' })
  const body = JSON.stringify(m.requests.at(-1)!.body)
  expect(body).toContain('The answer is 42.')
  expect(body).toContain('what is the answer?')
}, 60_000)
