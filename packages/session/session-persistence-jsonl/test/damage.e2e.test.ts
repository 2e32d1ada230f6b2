// `dsh --continue` when the newest session of the directory is damaged: one line naming the session
// and the file, exit 1, no model call, and neither that log nor the older session's is changed (the
// older session is NOT continued in its place). Real `dsh` bin, real files, the mock model.
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, realpathSync, writeFileSync } from 'node:fs'
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

/** Two stored sessions of one directory, the second newer; returns their ids and log paths. */
async function twoSessions() {
  const root = realpathSync(mkdtempSync(join(tmpdir(), 'dsh-damage-')))
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
  const logOf = (id: string) => {
    const sessions = join(home, 'sessions')
    for (const key of readdirSync(sessions)) {
      const dir = join(sessions, key, id)
      try {
        const file = readdirSync(dir).find((f) => f.startsWith('session.jsonl'))
        if (file) return join(dir, file)
      } catch {
        // not under this key
      }
    }
    throw new Error(`no log for ${id}`)
  }
  return { cwd, env, older: ids[0], newer: ids[1], olderLog: logOf(ids[0]), newerLog: logOf(ids[1]) }
}

describe('dsh --continue with the newest session damaged', () => {
  it.each([
    ['emptied to 0 bytes', (_bytes: Buffer) => Buffer.alloc(0), /empty \(0 bytes\)/],
    [
      'overwritten at its start',
      (bytes: Buffer) => Buffer.concat([Buffer.alloc(48, 0x41), bytes.subarray(48)]),
      /corrupt/,
    ],
  ] as const)(
    'log %s: one line naming session and file, exit 1, nothing continued or overwritten',
    async (_label, damage, reason) => {
      const s = await twoSessions()
      const damaged = damage(readFileSync(s.newerLog))
      writeFileSync(s.newerLog, damaged)
      const olderBytes = readFileSync(s.olderLog)
      const run = await runDsh(['--profile', 'headless', '--continue', 'third task'], { cwd: s.cwd, env: s.env })
      expect(run.code).toBe(1)
      expect(run.stdout).toBe('')
      const lines = run.stderr.trim().split('\n')
      expect(lines).toHaveLength(1)
      expect(lines[0]).toContain(`session ${s.newer}`)
      expect(lines[0]).toContain(s.newerLog)
      expect(lines[0]).toMatch(reason)
      expect(mock!.requests).toHaveLength(2)
      expect(readFileSync(s.newerLog).equals(damaged)).toBe(true)
      expect(readFileSync(s.olderLog).equals(olderBytes)).toBe(true)
      // The listing still shows both; the damaged one is marked, not hidden.
      const listed = await runDsh(['--profile', 'headless', '--list-sessions', '--output-format', 'json'], {
        cwd: s.cwd,
        env: s.env,
      })
      expect(listed.code).toBe(0)
      const rows = JSON.parse(listed.stdout) as Array<{ id: string; damaged?: string }>
      expect(rows.map((r) => r.id)).toEqual([s.newer, s.older])
      expect(rows[0].damaged).toMatch(reason)
    },
  )
})
