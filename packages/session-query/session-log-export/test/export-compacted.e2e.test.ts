// After a compaction the live session keeps the events behind the `surface/replace` as released
// placeholders (`@dsh/session` `compactedEvents: 'release'`, the default): the real `dsh web`
// must still serve them whole to every reader. Checked against what the log held before the
// compaction: the history page, the export ZIP and a fork from before the compaction point.
import { execFileSync } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { useWebApp, waitForSessionEvent } from '@dsh/web-testkit'

vi.setConfig({ testTimeout: 60_000, hookTimeout: 90_000 })

const SUMMARY = `Summary: the user said one, then two. ${'The assistant answered each time. '.repeat(12)}`
// Eight answers of ~3k tokens (the history is over compaction's 20k-token recent budget, and
// over one release block of events), then the summary.
const TURNS = 8
const long = (label: string) => `${label} ${'lorem ipsum dolor sit amet '.repeat(500)}`
const STEPS = [...Array.from({ length: TURNS }, (_, i) => ({ text: long(`Answer ${i}.`) })), { text: SUMMARY }]

const web = useWebApp({ steps: STEPS as never })
let scratch: string
beforeAll(() => {
  scratch = mkdtempSync(join(tmpdir(), 'dsh-export-compacted-'))
})
afterAll(() => {
  rmSync(scratch, { recursive: true, force: true })
})

const plain = (value: unknown) => JSON.parse(JSON.stringify(value))
/** Waits until `check` holds (it reads the host's state); fails after 30 s instead of going on. */
const waitFor = async (check: () => Promise<boolean>) => {
  await vi.waitFor(async () => expect(await check()).toBe(true), { timeout: 30_000, interval: 100 })
}
const history = async (sessionId: string) =>
  (await web.call('sessions.history', { sessionId, fromSeq: 0, limit: 5000 })).events as Array<{
    type: string
    seq: number
    data: any
  }>
const idle = (sessionId: string) =>
  waitFor(
    async () =>
      (await web.call('sessions.list')).sessions.find((s: any) => s.sessionId === sessionId)?.status === 'idle',
  )

describe('a compacted live session, read whole', () => {
  it('history, export and a fork from before the compaction see every released event whole', async () => {
    const { session } = await web.call('sessions.create', { cwd: web.cwd })
    const id = session.sessionId as string
    for (let turn = 0; turn < TURNS; turn++) {
      await web.call('sessions.prompt', { sessionId: id, text: `prompt ${turn}` })
      await idle(id)
    }
    const before = await history(id)
    expect(before.filter((e) => e.type === 'assistant/message')).toHaveLength(TURNS)

    const ran = await web.call('commands.execute', { sessionId: id, line: '/compact' })
    expect(ran.output).not.toMatch(/Nothing compacted/)
    await waitForSessionEvent(web, id, 'surface/replace')
    const after = await history(id)
    const replace = after.find((e) => e.type === 'surface/replace')!
    expect(replace.data.toSeq).toBeGreaterThan(5)
    // The history page: every event logged before the compaction, unchanged.
    expect(plain(after.slice(0, before.length))).toEqual(plain(before))

    // The export: the log line for line, equal to the history and to what was logged before.
    const response = await fetch(`${web.url.replace(/\/$/, '')}/export/${id}.zip`)
    expect(response.status).toBe(200)
    const file = join(scratch, 'compacted.zip')
    writeFileSync(file, Buffer.from(await response.arrayBuffer()))
    const lines = execFileSync('unzip', ['-p', file, 'session.jsonl'])
      .toString('utf8')
      .trimEnd()
      .split('\n')
      .map((line) => JSON.parse(line))
    expect(lines.slice(0, after.length)).toEqual(plain(after).slice(0, lines.length))
    expect(lines.slice(0, before.length)).toEqual(plain(before))

    // A fork from before the compaction point (before turn 3): the copied prefix is whole.
    const { session: fork } = await web.call('sessions.fork', { sessionId: id, beforeTurn: 3 })
    const forked = await history(fork.sessionId)
    const boundary = before.find((e) => e.type === 'turn/start' && e.data.turn === 3)!.seq
    expect(plain(forked.slice(0, boundary))).toEqual(plain(before.slice(0, boundary)))
    expect(forked[boundary]).toMatchObject({ type: 'seed/end', data: { fromSession: id, boundary } })
  })
})
