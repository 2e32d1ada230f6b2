// `dsh sessions` over the store index (issue #42): the real `dsh` bin, the mock model, real files.
// Sessions written by one-shot runs and a `--continue` run are listed from `index.jsonl`; the
// output, text and JSON, is byte for byte what the same store lists with no index and no summary
// caches (every row computed from its log).
import { existsSync, mkdirSync, mkdtempSync, readdirSync, realpathSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, expect, it, vi } from 'vitest'
import { runDsh } from '@dsh/cli-testkit'
import { startMockServer, type MockServer } from '@dsh/llm-mock-server'
import { INDEX_FILE, readIndex } from '../src/index.ts'

vi.setConfig({ testTimeout: 90_000 })

let mock: MockServer | undefined
afterAll(async () => {
  await mock?.close()
})

it('dsh sessions lists from the index, with the output the logs alone give', async () => {
  const root = realpathSync(mkdtempSync(join(tmpdir(), 'dsh-list-index-')))
  const home = join(root, 'home')
  const cwd = join(root, 'work')
  mkdirSync(cwd, { recursive: true })
  mock = await startMockServer({
    steps: [{ text: 'first answer' }, { text: 'second answer' }, { text: 'third answer' }] as never,
  })
  const env = {
    DSH_HOME: home,
    HOME: home,
    DEEPSEEK_BASE_URL: mock.baseURL,
    DEEPSEEK_API_KEY: 'sk-test-not-a-real-key',
  }
  for (const args of [['first task'], ['second task'], ['-c', 'more on the second']]) {
    const run = await runDsh(['--profile', 'headless', ...args], { cwd, env })
    expect(run.code, run.stderr).toBe(0)
  }
  const sessions = join(home, 'sessions')
  // The writers' closes filled the index: two sessions, the continued one with both its turns.
  const { rows, damage } = readIndex(sessions)
  expect(damage).toBeUndefined()
  expect(rows.size).toBe(2)
  expect([...rows.values()].map((r) => r.summary.turns).sort()).toEqual([1, 2])

  const list = async () => {
    const text = await runDsh(['sessions', '--all'], { cwd, env })
    const json = await runDsh(['sessions', '--all', '--output-format', 'json'], { cwd, env })
    expect(text.code, text.stderr).toBe(0)
    expect(json.code, json.stderr).toBe(0)
    return { text: text.stdout, json: json.stdout, stderr: text.stderr + json.stderr }
  }
  const indexed = await list()
  expect(indexed.stderr).not.toMatch(/index/)
  expect(JSON.parse(indexed.json).map((r: { turns: number }) => r.turns)).toEqual([2, 1])

  // The same store with no index and no summary.json: every row comes from its log.
  rmSync(join(sessions, INDEX_FILE))
  for (const key of readdirSync(sessions))
    for (const id of readdirSync(join(sessions, key))) rmSync(join(sessions, key, id, 'summary.json'), { force: true })
  const fromLogs = await list()
  expect(fromLogs.text).toBe(indexed.text)
  expect(fromLogs.json).toBe(indexed.json)
  // That listing rebuilt the index.
  expect(existsSync(join(sessions, INDEX_FILE))).toBe(true)
  expect(readIndex(sessions).rows.size).toBe(2)
  rmSync(root, { recursive: true, force: true })
})
