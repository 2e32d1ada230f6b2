// Issue #35: a damaged or missing `header.json`, and a log that was written and is gone, are damage
// like a damaged log. `dsh sessions` lists the session as damaged, and `dsh --continue` stops at
// it with one line naming the session and the file, exit 1, no model call: it never silently
// continues the older session. Real `dsh` bin, real files, the mock model.
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
import { afterEach, describe, expect, it, vi } from 'vitest'
import { runDsh } from '@dsh/cli-testkit'
import { startMockServer, type MockServer } from '@dsh/llm-mock-server'

vi.setConfig({ testTimeout: 60_000 })

let mock: MockServer | undefined
afterEach(async () => {
  await mock?.close()
  mock = undefined
})

/** Two stored sessions of one directory, the second newer; returns their directories. */
async function twoSessions() {
  const root = realpathSync(mkdtempSync(join(tmpdir(), 'dsh-damage-header-')))
  const home = join(root, 'home')
  const cwd = join(root, 'work')
  mkdirSync(cwd, { recursive: true })
  mock = await startMockServer({
    steps: [{ text: 'first answer' }, { text: 'second answer' }, { text: 'should never be asked' }] as never,
  })
  const env = {
    DSH_HOME: home,
    HOME: home,
    DEEPSEEK_BASE_URL: mock.baseURL,
    DEEPSEEK_API_KEY: 'sk-test-not-a-real-key',
  }
  const ids: string[] = []
  for (const task of ['first task', 'second task']) {
    const run = await runDsh(['--profile', 'headless', '--output-format', 'json', task], { cwd, env })
    expect(run.code).toBe(0)
    ids.push(JSON.parse(run.stdout).sessionId)
  }
  const dirOf = (id: string) => {
    const sessions = join(home, 'sessions')
    for (const key of readdirSync(sessions)) if (existsSync(join(sessions, key, id))) return join(sessions, key, id)
    throw new Error(`no directory for ${id}`)
  }
  // A listing before the damage writes each session's summary cache: the damage must be seen
  // through a warm cache too.
  expect((await runDsh(['sessions', '--output-format', 'json'], { cwd, env })).code).toBe(0)
  const newerDir = dirOf(ids[1])
  expect(existsSync(join(newerDir, 'summary.json'))).toBe(true)
  const log = readdirSync(newerDir).find((f) => f.startsWith('session.jsonl'))!
  return { cwd, env, older: ids[0], newer: ids[1], olderDir: dirOf(ids[0]), newerDir, newerLog: join(newerDir, log) }
}

type Setup = Awaited<ReturnType<typeof twoSessions>>

const cases: Array<[string, (s: Setup) => string, RegExp]> = [
  [
    'header.json is not JSON',
    (s) => (writeFileSync(join(s.newerDir, 'header.json'), '{"version": 1, "id": '), join(s.newerDir, 'header.json')),
    /not valid JSON/,
  ],
  [
    'header.json is JSON of the wrong shape',
    (s) => (writeFileSync(join(s.newerDir, 'header.json'), '{"version": 1}\n'), join(s.newerDir, 'header.json')),
    /names id/,
  ],
  [
    'header.json is missing',
    (s) => (rmSync(join(s.newerDir, 'header.json')), join(s.newerDir, 'header.json')),
    /is missing while its log remains/,
  ],
  ['the log is missing', (s) => (rmSync(s.newerLog), s.newerLog), /is missing/],
]

describe('dsh with the newest session header-damaged or log-less', () => {
  it.each(cases)('%s: listed as damaged, --continue names session and file, exit 1', async (_label, damage, reason) => {
    const s = await twoSessions()
    const file = damage(s)
    const olderLog = readdirSync(s.olderDir).find((f) => f.startsWith('session.jsonl'))!
    const olderBytes = readFileSync(join(s.olderDir, olderLog))

    const listed = await runDsh(['sessions', '--output-format', 'json'], { cwd: s.cwd, env: s.env })
    expect(listed.code).toBe(0)
    const rows = JSON.parse(listed.stdout) as Array<{ id: string; cwd: string; damaged?: string }>
    expect(rows.map((r) => r.id)).toEqual([s.newer, s.older])
    expect(rows[0].cwd).toBe(s.cwd)
    expect(rows[0].damaged).toMatch(reason)
    expect(rows[0].damaged).toContain(file)
    expect(rows[1].damaged).toBeUndefined()
    const text = await runDsh(['sessions'], { cwd: s.cwd, env: s.env })
    expect(text.stdout).toContain('(damaged: ')

    const run = await runDsh(['--profile', 'headless', '--continue', 'third task'], { cwd: s.cwd, env: s.env })
    expect(run.code).toBe(1)
    expect(run.stdout).toBe('')
    const lines = run.stderr.trim().split('\n')
    expect(lines).toHaveLength(1)
    expect(lines[0]).toContain(`session ${s.newer}`)
    expect(lines[0]).toContain(file)
    expect(lines[0]).toMatch(reason)
    expect(mock!.requests).toHaveLength(2)
    expect(readFileSync(join(s.olderDir, olderLog)).equals(olderBytes)).toBe(true)
    // The damaged session was not rewritten either: no new log appeared where one was lost.
    expect(readdirSync(s.newerDir).filter((f) => f.startsWith('session.jsonl')).length).toBe(
      file === s.newerLog ? 0 : 1,
    )
  })

  it('a session that never wrote an event is not damage (positive control)', async () => {
    const s = await twoSessions()
    // What a session looks like between create and its first batch: header only.
    for (const f of readdirSync(s.newerDir)) if (f !== 'header.json') rmSync(join(s.newerDir, f))
    const listed = await runDsh(['sessions', '--all', '--output-format', 'json'], { cwd: s.cwd, env: s.env })
    const rows = JSON.parse(listed.stdout) as Array<{ id: string; turns: number; damaged?: string }>
    expect(rows.find((r) => r.id === s.newer)).toMatchObject({ turns: 0 })
    expect(rows.find((r) => r.id === s.newer)?.damaged).toBeUndefined()
    const run = await runDsh(['--profile', 'headless', '--output-format', 'json', '--continue', 'third task'], {
      cwd: s.cwd,
      env: s.env,
    })
    expect(run.code).toBe(0)
    expect(JSON.parse(run.stdout).sessionId).toBe(s.older)
  })
})
