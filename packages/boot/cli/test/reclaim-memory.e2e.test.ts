// After a compaction, the one-shot's resident memory falls (compaction-basic's `reclaimMemory`,
// on by default): through the real bin and the scripted model, a session grows its heap over a
// few hundred steps, the model then reports a full context window, compaction summarises, and the
// RSS at the first request after the compaction is below the RSS at the summary request, and the
// young generation has shrunk. The same session with `reclaimMemory: false` (a `--patch` layer)
// is the control: its young generation keeps its size and its RSS falls less (in practice it
// rises), so the fall is the feature's and not the garbage collector's ordinary work. RSS and the
// young generation's committed size are read inside the dsh process at each model request by a
// small `--import` hook.
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { afterAll, expect, it } from 'vitest'
import { startMockServer, type MockServer, type MockStep } from '@dsh/llm-mock-server'
import { runDsh } from '@dsh/cli-testkit'

const STEPS = 80 // agent steps before the compaction
const FILE_BYTES = 30_000

const mocks: MockServer[] = []
afterAll(async () => {
  for (const m of mocks.splice(0)) await m.close()
  rmSync(root, { recursive: true, force: true })
})

const root = mkdtempSync(join(tmpdir(), 'dsh-reclaim-e2e-'))
const ws = join(root, 'ws')
mkdirSync(ws)
for (let i = 0; i <= STEPS; i++) {
  let text = ''
  for (let line = 0; text.length < FILE_BYTES; line++) text += `export const v${line} = ${line * 7} // module ${i}\n`
  writeFileSync(join(ws, `m${i}.ts`), text.slice(0, FILE_BYTES))
}
// The hook: RSS at every outgoing model request, written as JSON when the process exits.
const hook = join(root, 'hook.mjs')
writeFileSync(
  hook,
  `import http from 'node:http'
import { syncBuiltinESMExports } from 'node:module'
import { writeFileSync } from 'node:fs'
import v8 from 'node:v8'
const rss = []
const request = http.request
http.request = function (...args) {
  const young = v8.getHeapSpaceStatistics().find((s) => s.space_name === 'new_space')
  rss.push([process.memoryUsage.rss(), young.physical_space_size])
  return request.apply(this, args)
}
syncBuiltinESMExports()
process.on('exit', () => {
  if (rss.length > 0) writeFileSync(process.env.RECLAIM_TEST_OUT, JSON.stringify(rss))
})
`,
)

function script(): MockStep[] {
  const steps: MockStep[] = []
  for (let i = 0; i < STEPS; i++)
    steps.push({
      toolCalls: [{ name: 'read', arguments: { file_path: `m${i}.ts` } }],
      // The last step before the compaction reports a full 1M-token window: compaction-basic
      // compacts before the next request (the content alone stays far below its trigger).
      usage: { prompt: i === STEPS - 1 ? 990_000 : 1_000, completion: 10 },
    } as MockStep)
  steps.push({
    label: 'summary',
    expect: { lastContains: 'about to be compacted' },
    text: 'Summary: the user asked to read every module in order; all were read. '.repeat(4),
  } as MockStep)
  steps.push({
    toolCalls: [{ name: 'read', arguments: { file_path: `m${STEPS}.ts` } }],
    usage: { prompt: 5_000, completion: 10 },
  } as MockStep)
  steps.push({ text: 'finished' } as MockStep)
  return steps
}

interface Sample {
  /** RSS and V8's committed young generation (bytes) at the summary request and the one after. */
  atSummary: number
  after: number
  youngAtSummary: number
  youngAfter: number
}

/** One session; what the hook read at the summary request and at the first request after it. */
async function session(reclaim: boolean): Promise<Sample> {
  const m = await startMockServer({ steps: script() })
  mocks.push(m)
  const home = join(root, `home-${reclaim}`)
  mkdirSync(home, { recursive: true })
  const out = join(root, `rss-${reclaim}.json`)
  // The pruner is off: its replacements would make compaction ignore the reported usage (a
  // rewritten surface is measured by content alone), and the compaction must come at one step.
  // This short session's heap is smaller than a long one's: the slack threshold is lowered from
  // its 16 MB default so the collection's skip rule does not decide the test.
  const patch = join(root, `reclaim-${reclaim}.patch.yml`)
  writeFileSync(
    patch,
    `- id: tool-result-pruner\n  disabled: true\n- id: compaction\n  config:\n    ${reclaim ? 'reclaimMinSlackMb: 4' : 'reclaimMemory: false'}\n`,
  )
  const args = ['--patch', patch, '--profile', 'headless', '--permission-mode', 'danger-full-access']
  args.push('--max-steps', String(STEPS + 10))
  const run = await runDsh([...args, '-p', 'read every module in order'], {
    cwd: ws,
    env: {
      DSH_HOME: home,
      DEEPSEEK_BASE_URL: m.baseURL,
      DEEPSEEK_API_KEY: 'sk-test-not-a-real-key',
      NODE_OPTIONS: `--import=${pathToFileURL(hook).href}`,
      RECLAIM_TEST_OUT: out,
    },
    timeoutMs: 90_000,
  })
  expect(run, run.stderr).toMatchObject({ code: 0, stdout: 'finished\n' })
  // No experimental-API warning reaches the user's terminal.
  expect(run.stderr).not.toMatch(/ExperimentalWarning|queryObjects/)
  const summary = m.requests.findIndex((r) => r.step === STEPS)
  expect(m.requests[summary].outcome, 'the summary request was answered').toBeDefined()
  expect(m.requests).toHaveLength(STEPS + 3)
  const rows: [number, number][] = JSON.parse(readFileSync(out, 'utf8'))
  expect(rows).toHaveLength(STEPS + 3)
  const [[atSummary, youngAtSummary], [after, youngAfter]] = [rows[summary], rows[summary + 1]]
  return { atSummary, after, youngAtSummary, youngAfter }
}

it('RSS falls after a compaction with reclaimMemory, and does not without it', async () => {
  const on = await session(true)
  const off = await session(false)
  const mb = (n: number) => `${(n / 2 ** 20).toFixed(1)} MB`
  const report =
    `RSS on ${mb(on.atSummary)} -> ${mb(on.after)}, off ${mb(off.atSummary)} -> ${mb(off.after)}; ` +
    `young generation on ${mb(on.youngAtSummary)} -> ${mb(on.youngAfter)}, off ${mb(off.youngAtSummary)} -> ${mb(off.youngAfter)}`
  // The feature: RSS after the compaction is below RSS before it, because V8 gave back its young
  // generation (grown to tens of MB over the session) and the old generation's slack.
  expect(on.after, report).toBeLessThan(on.atSummary)
  expect(on.youngAfter, report).toBeLessThan(on.youngAtSummary / 2)
  // The control, same session without it: the ordinary collections keep the young generation,
  // and whatever RSS they return at that moment is less than the feature returns.
  expect(off.youngAfter, report).toBeGreaterThanOrEqual(off.youngAtSummary)
  expect(on.atSummary - on.after, report).toBeGreaterThan(off.atSummary - off.after)
}, 180_000)
