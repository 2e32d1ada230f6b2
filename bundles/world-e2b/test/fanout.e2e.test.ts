// End-to-end: three subagents fanned out to three E2B sandboxes at once (`world: "e2b"` on the
// subagent tool), through the real bin, the stand-in and the mock model. Each child works in its
// own sandbox; all three run at the same time; each is killed when its child ends, its change
// saved as its own patch.
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { startMockServer, type MockServer } from '@dsh/llm-mock-server'
import { runDsh } from '@dsh/cli-testkit'
import { startE2bStandin, type E2bStandin } from '@dsh/e2b-standin'

let standin: E2bStandin
let server: MockServer | undefined
beforeAll(async () => {
  standin = await startE2bStandin()
})
afterAll(async () => {
  await standin.close()
})
afterEach(async () => {
  await server?.close()
  server = undefined
})

const child = (n: number) => ({
  name: 'subagent',
  arguments: { description: `part ${n}`, prompt: `do part ${n}`, world: 'e2b' },
})
// Each child records its machine, then waits until the test lets it go (all three are then known
// to run at once), then writes its result.
const WORK =
  'hostname > who.txt; while [ ! -f go ]; do sleep 0.05; done; echo "done on $(hostname)" > out.txt; cat who.txt'

describe('subagents with world: "e2b"', () => {
  it('three children run in three sandboxes at once, each killed at the end', async () => {
    const cwd = mkdtempSync(join(tmpdir(), 'dsh-e2b-fanout-'))
    writeFileSync(join(cwd, '.gitignore'), 'home/\n')
    writeFileSync(join(cwd, 'README'), 'shared input\n')
    const home = join(cwd, 'home')
    const s = (server = await startMockServer({
      steps: [
        { toolCalls: [child(1), child(2), child(3)] },
        // The three children's first requests (in any order): the same command.
        ...[1, 2, 3].map(() => ({ toolCalls: [{ name: 'bash', arguments: { command: WORK, description: 'work' } }] })),
        ...[1, 2, 3].map(() => ({ text: 'part done' })),
        { text: 'All three done.' },
      ] as never,
    }))
    const before = new Set(standin.sandboxes().map((x) => x.record.id))
    const mark = standin.requests.length
    let finished = false
    const running = runDsh(['-p', '--world', 'e2b', 'split the work'], {
      cwd,
      env: { DSH_HOME: home, DEEPSEEK_BASE_URL: s.baseURL, DEEPSEEK_API_KEY: 'sk-test-not-a-real-key', ...standin.env },
      timeoutMs: 120_000,
    }).finally(() => (finished = true))
    // The observable event: three new sandboxes, each with its child's command waiting.
    const waiting = () =>
      standin
        .sandboxes()
        .filter(
          (x) =>
            !before.has(x.record.id) &&
            [...x.processes.values()].some((p) => p.config.args.join(' ').includes('while [ ! -f go ]')),
        )
    await expect.poll(() => finished || waiting().length === 3, { timeout: 45_000, interval: 20 }).toBe(true)
    const three = waiting()
    expect(three).toHaveLength(3)
    const ids = three.map((x) => x.record.id).sort()
    for (const id of ids) writeFileSync(join(standin.rootOf(id), cwd, 'go'), '')
    const run = await running
    expect(run, run.stderr).toMatchObject({ code: 0, stdout: 'All three done.\n' })
    const mine = standin.requests.slice(mark)
    // Three creates, three kills: one sandbox per child, none for the parent (it ran no command).
    const created = mine.filter((r) => r.method === 'POST' && r.path === '/sandboxes').map((r) => r.sandboxId)
    expect(created.sort()).toEqual(ids)
    const killed = mine.filter((r) => r.method === 'DELETE').map((r) => r.path.split('/').pop())
    expect(killed.sort()).toEqual(ids)
    for (const id of ids) expect(standin.get(id)).toBeUndefined()
    // Each child saw its own machine, and its change came back as its own patch.
    const results = (
      s.requests[s.requests.length - 1].body as { messages: { role: string; content: string }[] }
    ).messages
      .filter((m) => m.role === 'tool')
      .map((m) => m.content)
    expect(results).toHaveLength(3)
    // The children's own bash results name three different machines: the three sandboxes.
    const machines = s.requests
      .flatMap((r) => (r.body as { messages: { role: string; content: string }[] }).messages)
      .filter((m) => m.role === 'tool' && /^i[0-9a-f]+\n/.test(m.content))
      .map((m) => m.content.split('\n')[0])
    expect([...new Set(machines)].sort()).toEqual(ids)
    for (const line of run.stderr.trim().split('\n'))
      expect(line).toMatch(
        /^dsh: the E2B sandbox i[0-9a-f]+ of subagent sub-[123] changed the workspace; patch saved to \S+ \(review it, then apply it with: git -C \S+ apply \S+\)$/,
      )
    const patched = [...run.stderr.matchAll(/the E2B sandbox (i[0-9a-f]+) of subagent/g)].map((m) => m[1]).sort()
    expect(patched).toEqual(ids)
  }, 60_000)
})
