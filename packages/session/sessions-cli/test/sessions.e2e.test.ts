// `dsh sessions`, `dsh sessions show` and `dsh sessions search` on the real bin: sessions made by
// real one-shot runs against the mock model, listed with titles and stats, searched literally.
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  realpathSync,
  rmSync,
  writeFileSync,
} from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { runDsh } from '@dsh/cli-testkit'
import { startMockServer, type MockServer } from '@dsh/llm-mock-server'
import { decodeDocument } from '@dsh/session-projection-cache'

vi.setConfig({ testTimeout: 90_000, hookTimeout: 180_000 })

const usage = [
  { prompt: 1200, completion: 40, cacheHit: 1000, reasoning: 8 },
  { prompt: 1300, completion: 25, cacheHit: 1200, reasoning: 0 },
  { prompt: 1400, completion: 60, cacheHit: 1280, reasoning: 12 },
]

let mock: MockServer
let root: string
let home: string
let cwd: string
let sessionId: string
const env = () => ({
  DSH_HOME: home,
  HOME: home,
  DEEPSEEK_BASE_URL: mock.baseURL,
  DEEPSEEK_API_KEY: 'sk-test-not-a-real-key',
})

beforeAll(async () => {
  root = realpathSync(mkdtempSync(join(tmpdir(), 'dsh-sessions-cli-')))
  home = join(root, 'home')
  cwd = join(root, 'work')
  mkdirSync(cwd, { recursive: true })
  writeFileSync(join(cwd, 'notes.txt'), 'the secret ingredient is cardamom-and-saffron\n')
  mock = await startMockServer({
    steps: [
      {
        toolCalls: [{ name: 'read', arguments: JSON.stringify({ file_path: join(cwd, 'notes.txt') }) }],
        usage: usage[0],
      },
      {
        toolCalls: [
          { name: 'todo_write', arguments: JSON.stringify({ todos: [{ content: 'cook', status: 'in_progress' }] }) },
        ],
        usage: usage[1],
      },
      { text: 'All read.', usage: usage[2] },
      { text: 'second session answer' },
      { text: 'third session answer' },
    ] as never,
  })
  const first = await runDsh(['-p', '--output-format', 'json', 'Read notes.txt and tell me the ingredient'], {
    cwd,
    env: env(),
  })
  expect(first.code, first.stderr).toBe(0)
  sessionId = JSON.parse(first.stdout).sessionId
  const second = await runDsh(['-p', 'a second, unrelated task'], { cwd: root, env: env() })
  expect(second.code, second.stderr).toBe(0)
})

afterAll(async () => {
  await mock?.close()
  rmSync(root, { recursive: true, force: true })
})

describe('dsh sessions', () => {
  it('lists this directory with titles and stats; --all lists every directory', async () => {
    const run = await runDsh(['sessions', '--output-format', 'json'], { cwd, env: env() })
    expect(run.code, run.stderr).toBe(0)
    const rows = JSON.parse(run.stdout)
    expect(rows).toHaveLength(1)
    expect(rows[0]).toMatchObject({
      id: sessionId,
      cwd,
      title: 'Read notes.txt and tell me the ingredient',
      titleSource: 'fallback',
      turns: 1,
      stats: { steps: 3, modelCalls: 3 },
    })
    expect(rows[0].stats.perTurn).toBeUndefined()
    const all = JSON.parse((await runDsh(['sessions', '--all', '--output-format', 'json'], { cwd, env: env() })).stdout)
    expect(all.map((r: { title: string }) => r.title).sort()).toEqual([
      'Read notes.txt and tell me the ingredient',
      'a second, unrelated task',
    ])
    const text = await runDsh(['sessions'], { cwd, env: env() })
    expect(text.stdout).toMatch(/^ID\s+UPDATED\s+TURNS\s+TITLE\n/)
    expect(text.stdout).toContain('Read notes.txt and tell me the ingredient')
  })

  it("without --all only this directory's rows are projected; --all projects the rest", async () => {
    const cache = join(home, 'storage', 'session_projcache.json')
    rmSync(cache, { force: true })
    rmSync(`${cache}.journal`, { force: true })
    const run = await runDsh(['sessions', '--output-format', 'json'], { cwd, env: env() })
    expect(run.code, run.stderr).toBe(0)
    expect(JSON.parse(run.stdout).map((r: { id: string }) => r.id)).toEqual([sessionId])
    // The other directory's log was not folded: the cold cache holds this directory's row only.
    expect(Object.keys(decodeDocument(readFileSync(cache, 'utf8'))!.checkpoints)).toEqual([sessionId])
    const all = await runDsh(['sessions', '--all', '--output-format', 'json'], { cwd, env: env() })
    expect(JSON.parse(all.stdout)).toHaveLength(2)
    const after = await runDsh(['sessions', '--output-format', 'json'], { cwd, env: env() })
    expect(after.stdout).toBe(run.stdout)
  })

  it('the text table is built from the stored summaries: no projection cache read or written', async () => {
    const cache = join(home, 'storage', 'session_projcache.json')
    rmSync(cache, { force: true })
    rmSync(`${cache}.journal`, { force: true })
    const text = await runDsh(['sessions', '--all'], { cwd, env: env() })
    expect(text.code, text.stderr).toBe(0)
    expect(text.stdout).toContain('Read notes.txt and tell me the ingredient')
    expect(text.stdout).toContain('a second, unrelated task')
    // Nothing was folded (no log read): the cache was not rebuilt.
    expect(existsSync(cache)).toBe(false)
    // JSON output projects (titles and stats) and so fills the cache.
    const json = await runDsh(['sessions', '--all', '--output-format', 'json'], { cwd, env: env() })
    expect(json.code, json.stderr).toBe(0)
    expect(Object.keys(decodeDocument(readFileSync(cache, 'utf8'))!.checkpoints)).toHaveLength(2)
  })

  it('show: the stats of the scripted 3-step turn match the mock usage exactly', async () => {
    const run = await runDsh(['sessions', 'show', sessionId, '--output-format', 'json'], { cwd, env: env() })
    expect(run.code, run.stderr).toBe(0)
    const row = JSON.parse(run.stdout)
    const sum = (f: (u: (typeof usage)[0]) => number) => usage.reduce((a, u) => a + f(u), 0)
    expect(row.stats).toMatchObject({
      turns: 1,
      steps: 3,
      modelCalls: 3,
      usageReported: 3,
      tokens: {
        input: sum((u) => u.prompt - u.cacheHit),
        cacheRead: sum((u) => u.cacheHit),
        cacheWrite: 0,
        // The DeepSeek adapter reports output and reasoning disjointly.
        output: sum((u) => u.completion - u.reasoning),
        reasoning: sum((u) => u.reasoning),
      },
      model: { provider: 'deepseek-official' },
    })
    expect(Object.keys(row.stats.tools).sort()).toEqual(['read', 'todo_write'])
    expect(row.stats.perTurn).toHaveLength(1)
    // `show` reads the one log; what it prints is the listing's row plus the per-turn figures.
    const listed = JSON.parse(
      (await runDsh(['sessions', '--all', '--output-format', 'json'], { cwd, env: env() })).stdout,
    ).find((r: { id: string }) => r.id === sessionId)
    const { perTurn: _perTurn, ...whole } = row.stats
    expect({ ...row, stats: whole }).toEqual(listed)
    const text = await runDsh(['sessions', 'show', sessionId], { cwd, env: env() })
    expect(text.stdout).toContain(
      `tokens    input ${sum((u) => u.prompt - u.cacheHit)}   output ${sum((u) => u.completion - u.reasoning)}`,
    )
    expect(text.stdout).toContain('steps 3   model calls 3')
  })

  it('search finds a phrase of a tool result; SQL and FTS syntax are literal', async () => {
    const run = await runDsh(['sessions', 'search', 'cardamom-and-saffron', '--output-format', 'json'], {
      cwd,
      env: env(),
    })
    expect(run.code, run.stderr).toBe(0)
    const hits = JSON.parse(run.stdout)
    expect(hits.map((h: { sessionId: string }) => h.sessionId)).toEqual([sessionId])
    expect(hits[0].type).toBe('tool/result')
    const bad = await runDsh(['sessions', 'search', '"); DROP TABLE fts; --', '--all'], { cwd, env: env() })
    expect(bad.code).toBe(0)
    expect(bad.stderr).toMatch(/no session contains/)
    const again = await runDsh(['sessions', 'search', 'cardamom', '--all', '--output-format', 'json'], {
      cwd,
      env: env(),
    })
    expect(JSON.parse(again.stdout)).toHaveLength(1)
  })

  it('show of a damaged log falls back to the listing and says so', async () => {
    const other = join(root, 'other')
    mkdirSync(other, { recursive: true })
    const third = await runDsh(['-p', '--output-format', 'json', 'a third task'], { cwd: other, env: env() })
    expect(third.code, third.stderr).toBe(0)
    const id = JSON.parse(third.stdout).sessionId
    const dir = readdirSync(join(home, 'sessions'), { recursive: true, withFileTypes: true }).find(
      (e) => e.isDirectory() && e.name === id,
    )!
    const log = readdirSync(join(dir.parentPath, id)).find((f) => f.startsWith('session.jsonl'))!
    writeFileSync(join(dir.parentPath, id, log), 'this is not a session log\n')
    const run = await runDsh(['sessions', 'show', id, '--output-format', 'json'], { cwd, env: env() })
    expect(run.code, run.stderr).toBe(0)
    const row = JSON.parse(run.stdout)
    expect(row.id).toBe(id)
    expect(typeof row.damaged).toBe('string')
    expect(row.stats).toBeUndefined()
    const text = await runDsh(['sessions', 'show', id], { cwd, env: env() })
    expect(text.stdout).toMatch(/^damaged {3}\S/m)
  })

  it('bad usage is one line and exit 2; an unknown id is exit 1', async () => {
    const bad = await runDsh(['sessions', 'frobnicate'], { cwd, env: env() })
    expect(bad.code).toBe(2)
    expect(bad.stderr.split('\n')[0]).toBe("dsh sessions: unknown sessions command 'frobnicate' (list, show or search)")
    const missing = await runDsh(['sessions', 'show', 'no-such-id'], { cwd, env: env() })
    expect(missing.code).toBe(1)
    expect(missing.stderr).toMatch(/no stored session "no-such-id"/)
    const format = await runDsh(['sessions', '--output-format', 'yaml'], { cwd, env: env() })
    expect(format.code).toBe(2)
  })
})
