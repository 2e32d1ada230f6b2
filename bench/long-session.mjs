#!/usr/bin/env node
// A long scripted session through the real plugin tree with compaction: BENCH_STEPS (default
// 2,000) steps, each one `read` call whose result is BENCH_RESULT_BYTES (default 5,000) characters,
// against the scripted model's 128k-token window. Runs two compositions in the same process
// order: compaction-basic alone, then compaction-basic with the tool-result pruner.
// Reports peak RSS, harness overhead per step over the first and last 100 steps (model time
// subtracted), the number of compactions and pruned results, the prompt tokens sent (agent and
// summary requests) against the sum an uncompacted session would have sent, and the share of
// prompt tokens that repeat the previous request's prefix (what a provider's prompt cache can hit).
// Tokens are estimated at four characters each, as the token meter does.
//
// BENCH_MODE=dsh runs the real one-shot instead (`dsh --profile headless`, the default DeepSeek
// adapter, its 1M-token window and the default compaction rows) against a small scripted
// chat-completions server on loopback: BENCH_STEPS (default 2,000) `read` calls of files of
// BENCH_RESULT_BYTES (default 1,050: about 1.5 KB of context per step, 3 MB at step 2,000; past
// ~2,100 steps compaction-basic summarises). It prints the step interval (end of one response ->
// the next request's last body byte, at the server) and the dsh process's CPU per step (user +
// system, read at each request by a small --import hook), as medians over the first and the last
// 100 steps and over the 100 before the first compaction, with the context size there; peak RSS
// before and after the first compaction and the RSS at the end. BENCH_BASE=/other/checkout runs
// that checkout's dsh too, alternated (a before/after in one run); BENCH_RUNS (default 1) runs
// each that many times. `node -e 0` is timed at the start and the end: a run whose second timing
// is over 1.5x the first is flagged as loaded. BENCH_MODE=both runs the harness part, then this.
// Memory (issue 42): the sampled peak RSS and the RSS at steps 1,000 / 2,000 / 3,000 / 4,000;
// BENCH_HEAP_STATS=1 adds V8's committed/used space sizes every 500 requests;
// BENCH_SNAPSHOT_DIR=dir BENCH_SNAPSHOTS=1000,2000 writes heap snapshots of the dsh process there
// (their RSS figures are then meaningless: a snapshot costs hundreds of MB); BENCH_NODE_FLAGS
// passes node flags to the dsh processes; BENCH_RECLAIM_AB=1 adds this checkout with
// compaction-basic's `reclaimMemory: false` as a third, alternated binary (the baseline of the
// collection after a compaction), and every run prints RSS at the agent requests either side of
// the first compaction with the CPU of that step; the RSS at the step before the first compaction and the
// lowest RSS in the 300 steps after it (does memory fall after compaction?); BENCH_TEXT_DELTAS=N streams N short text deltas before
// each call (a talkative model: N more assistant/chunk events per step).
import { spawn } from 'node:child_process'
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { createServer } from 'node:http'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { register } from 'tsx/esm/api'
import { performance } from 'node:perf_hooks'

const MODE = process.env.BENCH_MODE ?? 'harness'
if (!['harness', 'dsh', 'both'].includes(MODE)) {
  console.error(`bench/long-session: BENCH_MODE must be harness, dsh or both, not ${JSON.stringify(MODE)}`)
  process.exit(2)
}
register()
const { createHarness } = await import('../packages/test-support/agent-loop-testkit/src/index.ts')
const { default: TokenMeter } = await import('../packages/session/token-meter/src/index.ts')
const { default: BasicCompactionEngine } = await import('../packages/compaction/compaction-basic/src/index.ts')
const { default: ToolResultPruner } = await import('../packages/compaction/compaction-tool-result-pruner/src/index.ts')

const STEPS = Number(process.env.BENCH_STEPS ?? 2000)
const RESULT = Number(process.env.BENCH_RESULT_BYTES ?? (MODE === 'dsh' ? 1050 : 5000))
const tokens = (chars) => Math.ceil(chars / 4)
const messageChars = new WeakMap()
const charsOf = (m) => {
  let n = messageChars.get(m)
  if (n === undefined) messageChars.set(m, (n = JSON.stringify(m).length))
  return n
}

async function run(label, withPruner) {
  let modelMs = 0
  let agentSteps = 0
  let uncompactedChars = 0 // every message-producing event ever appended (the uncompacted history)
  let sentTokens = 0
  let uncompactedTokens = 0
  let reusedTokens = 0
  let previous
  const summaryText = 'Summary: the user asked to read every source file in order. '.repeat(25)
  const entry = (request) => {
    const t0 = performance.now()
    const headerChars = (request.system ?? '').length + JSON.stringify(request.tools ?? []).length
    let chars = headerChars
    for (const m of request.messages) chars += charsOf(m)
    sentTokens += tokens(chars)
    // Prefix shared with the previous request (log messages are shared objects, so identity works).
    if (previous && previous.system === request.system) {
      let shared = headerChars
      for (let i = 0; i < request.messages.length && previous.messages[i] === request.messages[i]; i++)
        shared += charsOf(request.messages[i])
      reusedTokens += tokens(shared)
    }
    previous = request
    const usage = { input: tokens(chars), output: 30 }
    let step
    if (request.metadata?.purpose === 'compaction') step = { usage, text: summaryText }
    else {
      uncompactedTokens += tokens(headerChars + uncompactedChars)
      const n = agentSteps++
      step =
        n < STEPS
          ? { usage, toolCalls: [{ name: 'read', arguments: { path: `src/module${n}.ts` } }] }
          : { usage, text: 'finished' }
    }
    modelMs += performance.now() - t0
    return step
  }
  const plugins = [[TokenMeter], [BasicCompactionEngine, {}]]
  if (withPruner) plugins.push([ToolResultPruner, {}])
  const harness = await createHarness({
    script: Array.from({ length: STEPS * 2 }, () => entry),
    maxSteps: STEPS + 10,
    plugins,
  })
  await harness.mount({
    name: 'read-tool',
    inject: ['tools'],
    apply(ctx) {
      ctx.tools.register({
        name: 'read',
        description: 'reads a file',
        parameters: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] },
        concurrencySafe: true,
        execute: (args) => {
          let text = ''
          for (let line = 0; text.length < RESULT; line++)
            text += `${args.path}:${line}: export const v${line} = ${line * 7} // value\n`
          return { content: text.slice(0, RESULT) }
        },
      })
    },
  })
  const marks = []
  harness.session.subscribe((event) => {
    if (event.type === 'step/start') marks.push([performance.now(), modelMs])
    if (event.type === 'user/message' || event.type === 'assistant/message' || event.type === 'tool/result') {
      uncompactedChars += JSON.stringify(
        event.type === 'user/message' ? { role: 'user', content: event.data.content } : event.data.message,
      ).length
    }
  })
  const t0 = performance.now()
  const result = await harness.prompt('read every module in order')
  const total = performance.now() - t0
  marks.push([performance.now(), modelMs])
  if (result.reason !== 'completed') {
    console.error(`bench/long-session (${label}): the turn ended with ${result.reason}`, result.error)
    process.exit(1)
  }
  const overhead = (from, to) => {
    const [w0, m0] = marks[from]
    const [w1, m1] = marks[to]
    return (w1 - w0 - (m1 - m0)) / (to - from)
  }
  const events = harness.session.events
  const compactions = events.filter((e) => e.type === 'compaction/end' && e.data.status === 'compacted').length
  const pruned = events.filter(
    (e) => e.type === 'surface/replace' && e.data.meta?.by === '@dsh/compaction-tool-result-pruner',
  ).length
  const early = overhead(1, Math.min(100, STEPS))
  const late = overhead(Math.max(STEPS - 99, 1), STEPS)
  console.log(`\n== ${label}`)
  console.log(
    `steps: ${STEPS + 1}, events in log: ${events.length}, wall: ${total.toFixed(0)} ms (model script ${modelMs.toFixed(0)} ms)`,
  )
  console.log(
    `harness overhead per step, steps 1-100: ${early.toFixed(3)} ms; steps ${STEPS - 99}-${STEPS}: ${late.toFixed(3)} ms (late/early ${(late / early).toFixed(2)}x)`,
  )
  console.log(`compactions: ${compactions}, pruned tool results: ${pruned}`)
  console.log(
    `prompt tokens sent: ${sentTokens.toLocaleString('en')} vs uncompacted ${uncompactedTokens.toLocaleString('en')} (${((100 * sentTokens) / uncompactedTokens).toFixed(1)}%)`,
  )
  console.log(
    `prompt tokens repeating the previous request's prefix (cacheable): ${((100 * reusedTokens) / sentTokens).toFixed(1)}%`,
  )
  console.log(
    `last request: ~${tokens((previous.system ?? '').length + JSON.stringify(previous.messages).length)} tokens of a 128,000 window`,
  )
  await harness.dispose()
}

if (MODE !== 'dsh') {
  await run('compaction-basic', false)
  await run('compaction-basic + tool-result-pruner', true)
  console.log(`\npeak RSS: ${(process.resourceUsage().maxRSS / 1024).toFixed(0)} MB`)
}
if (MODE !== 'harness') await dshRuns()

// ---- BENCH_MODE=dsh: the real one-shot over HTTP ----

async function dshRuns() {
  const RUNS = Number(process.env.BENCH_RUNS ?? 1)
  const CHECKPOINTS = [1000, 2000, 3000, 4000, 6000, 8000]
  const TEXT_DELTAS = Number(process.env.BENCH_TEXT_DELTAS ?? 0)
  // BENCH_NODE_FLAGS: extra node flags for the dsh processes (e.g. V8 heap sizing experiments).
  const NODE_FLAGS = (process.env.BENCH_NODE_FLAGS ?? '').split(' ').filter(Boolean)
  const WINDOW = 100
  const thisBin = fileURLToPath(new URL('../packages/boot/cli/bin/dsh.mjs', import.meta.url))
  const bins = [['this', thisBin, []]]
  if (process.env.BENCH_BASE)
    bins.push(['base', join(resolve(process.env.BENCH_BASE), 'packages/boot/cli/bin/dsh.mjs'), []])
  const root = mkdtempSync(join(tmpdir(), 'dsh-bench-long-session-'))
  // BENCH_RECLAIM_AB=1: this checkout again with compaction-basic's `reclaimMemory: false` (no
  // memory-reducing collection after a compaction), alternated: the feature's baseline, same run.
  if (process.env.BENCH_RECLAIM_AB) {
    const patch = join(root, 'no-reclaim.patch.yml')
    writeFileSync(patch, '- id: compaction\n  config:\n    reclaimMemory: false\n')
    bins.push(['no-reclaim', thisBin, ['--patch', patch]])
  }
  const ws = join(root, 'ws')
  mkdirSync(ws)
  for (let i = 0; i < STEPS; i++) {
    let text = ''
    for (let line = 0; text.length < RESULT; line++) text += `export const v${line} = ${line * 7} // module ${i}\n`
    writeFileSync(join(ws, `m${i}.ts`), text.slice(0, RESULT))
  }
  // The hook: CPU, current RSS and the highest RSS since the previous request, at each request.
  // BENCH_SNAPSHOTS=1000,2000 (request numbers) with BENCH_SNAPSHOT_DIR: the hook writes a heap
  // snapshot of the dsh process (and its memoryUsage as JSON) there at those requests.
  const SNAPSHOT_DIR = process.env.BENCH_SNAPSHOT_DIR && resolve(process.env.BENCH_SNAPSHOT_DIR)
  const SNAPSHOTS = SNAPSHOT_DIR ? (process.env.BENCH_SNAPSHOTS ?? '').split(',').filter(Boolean).map(Number) : []
  const hook = join(root, 'hook.mjs')
  const marksFile = join(root, 'marks.json')
  writeFileSync(
    hook,
    `import http from 'node:http'
import { syncBuiltinESMExports } from 'node:module'
import { writeFileSync } from 'node:fs'
import v8 from 'node:v8'
const rows = []
const heap = []
let high = 0
const snapshotAt = new Set(${JSON.stringify(SNAPSHOTS)})
const snapshotDir = ${JSON.stringify(SNAPSHOT_DIR ?? '')}
setInterval(() => { high = Math.max(high, process.memoryUsage.rss()) }, 10).unref()
const request = http.request
http.request = function (...args) {
  const { user, system } = process.cpuUsage()
  const rss = process.memoryUsage.rss()
  rows.push([(user + system) / 1000, rss, Math.max(high, rss)])
  high = 0
  if (rows.length % 500 === 0) {
    const spaces = {}
    for (const s of v8.getHeapSpaceStatistics()) spaces[s.space_name] = [s.physical_space_size, s.space_used_size]
    heap.push([rows.length, spaces, process.memoryUsage().external])
  }
  if (snapshotAt.has(rows.length)) {
    const { heapUsed, heapTotal, arrayBuffers } = process.memoryUsage()
    const name = snapshotDir + '/' + process.env.BENCH_LABEL + '-' + rows.length
    writeFileSync(name + '.json', JSON.stringify({ rss, heapUsed, heapTotal, arrayBuffers }))
    v8.writeHeapSnapshot(name + '.heapsnapshot')
  }
  return request.apply(this, args)
}
// The collection after a compaction (compaction-basic's reclaimMemory) goes through
// v8.queryObjects: its CPU and RSS either side, per call.
const reclaims = []
const queryObjects = v8.queryObjects
if (queryObjects)
  v8.queryObjects = function (...args) {
    const before = process.cpuUsage()
    const rss = process.memoryUsage.rss()
    try {
      return queryObjects.apply(this, args)
    } finally {
      const used = process.cpuUsage(before)
      reclaims.push([(used.user + used.system) / 1000, rss, process.memoryUsage.rss()])
    }
  }
syncBuiltinESMExports()
process.on('exit', () => writeFileSync(${JSON.stringify(marksFile)}, JSON.stringify({ rows, heap, reclaims, maxRSS: process.resourceUsage().maxRSS * 1024 })))
`,
  )
  // The model: every agent request gets one `read` of the next file, a compaction request (its
  // last user message asks for the summary) gets a summary, and the step after the last a text.
  let stamps = []
  let agentSteps = 0
  const frame = (o) => `data: ${JSON.stringify(o)}\n\n`
  const server = createServer((req, res) => {
    const head = performance.now()
    const chunks = []
    let bytes = 0
    req.on('data', (c) => {
      bytes += c.length
      chunks.push(c)
    })
    req.on('end', () => {
      const arrived = performance.now()
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8'))
      const last = body.messages.at(-1)
      const summary = last.role === 'user' && /about to be compacted/.test(String(last.content))
      const base = { id: `c${stamps.length}`, object: 'chat.completion.chunk', created: 0, model: body.model }
      const choice = (delta, finish) => ({ ...base, choices: [{ index: 0, delta, finish_reason: finish }] })
      let out = frame(choice({ role: 'assistant', content: '' }, null))
      if (summary)
        out += frame(choice({ content: 'Summary: the user asked to read every module in order. '.repeat(20) }, 'stop'))
      else if (agentSteps < STEPS) {
        // BENCH_TEXT_DELTAS: a streamed sentence of that many short deltas before the call.
        for (let d = 0; d < TEXT_DELTAS; d++)
          out += frame(choice({ content: d === 0 ? 'Reading the next ' : 'module ' }, null))
        const call = { index: 0, id: `call_${stamps.length}`, type: 'function' }
        call.function = { name: 'read', arguments: JSON.stringify({ file_path: `m${agentSteps++}.ts` }) }
        out += frame(choice({ tool_calls: [call] }, 'tool_calls'))
      } else out += frame(choice({ content: 'finished' }, 'stop'))
      const prompt = Math.ceil(bytes / 4)
      out += frame({
        ...base,
        choices: [],
        usage: { prompt_tokens: prompt, completion_tokens: 30, total_tokens: prompt + 30 },
      })
      out += 'data: [DONE]\n\n'
      res.writeHead(200, { 'content-type': 'text/event-stream' })
      res.end(out, () =>
        stamps.push({ head, arrived, ended: performance.now(), bytes, summary, port: req.socket.remotePort }),
      )
    })
  })
  await new Promise((done) => server.listen(0, '127.0.0.1', done))
  const env = {
    PATH: process.env.PATH,
    HOME: root,
    DSH_HOME: join(root, 'home'),
    DEEPSEEK_API_KEY: 'sk-bench',
    DEEPSEEK_BASE_URL: `http://127.0.0.1:${server.address().port}/v1`,
  }
  const run = (args, label = 'node') =>
    new Promise((done, fail) => {
      const t0 = performance.now()
      const child = spawn(process.execPath, args, {
        cwd: ws,
        env: { ...env, BENCH_LABEL: label },
        stdio: ['ignore', 'ignore', 'pipe'],
      })
      let err = ''
      child.stderr.on('data', (d) => (err += d))
      child.on('error', fail)
      child.on('close', (code) => (code === 0 ? done(performance.now() - t0) : fail(new Error(`exit ${code}: ${err}`))))
    })
  const nodeZero = async () => {
    const t = []
    for (let i = 0; i < 5; i++) t.push(await run(['-e', '0']))
    return median(t)
  }
  const median = (xs) => {
    const sorted = [...xs].sort((a, b) => a - b)
    return sorted.length ? sorted[Math.floor(sorted.length / 2)] : Number.NaN
  }
  const mb = (n) => `${(n / 1e6).toFixed(2)} MB`
  const zeroBefore = await nodeZero()
  const results = []
  for (let r = 0; r < RUNS; r++) {
    for (const [label, bin, binArgs] of bins) {
      stamps = []
      agentSteps = 0
      rmSync(join(root, 'home'), { recursive: true, force: true })
      const t0 = performance.now()
      await run(
        [
          ...NODE_FLAGS,
          '--import',
          hook,
          bin,
          ...binArgs,
          '--profile',
          'headless',
          '--permission-mode',
          'danger-full-access',
          '--max-steps',
          String(STEPS + 10),
          'read every module in order',
        ],
        label,
      )
      const wall = performance.now() - t0
      const { rows, heap, reclaims, maxRSS } = JSON.parse(readFileSync(marksFile, 'utf8'))
      // Step k: from the end of response k-1 to request k (both agent requests).
      const steps = []
      let compactedAt
      for (let k = 1; k < stamps.length; k++) {
        if (stamps[k].summary) compactedAt ??= steps.length
        if (stamps[k].summary || stamps[k - 1].summary) continue
        steps.push({
          ms: stamps[k].arrived - stamps[k - 1].ended,
          cpu: rows[k][0] - rows[k - 1][0],
          bytes: stamps[k].bytes,
          rss: rows[k][1],
          high: rows[k][2],
        })
      }
      const at = (from, to) => {
        const w = steps.slice(Math.max(0, from), Math.max(0, to))
        return { ms: median(w.map((s) => s.ms)), cpu: median(w.map((s) => s.cpu)), bytes: w.at(-1)?.bytes ?? 0 }
      }
      // The compaction itself: from the agent request that preceded the summary request to the
      // first agent request after it (CPU of the summary step, the replace and any reclaim; the
      // model's time is the server's and not counted), and RSS at both ends.
      const summaryAt = stamps.findIndex((s) => s.summary)
      const compaction =
        summaryAt > 0 && summaryAt + 1 < rows.length
          ? {
              cpu: rows[summaryAt + 1][0] - rows[summaryAt - 1][0],
              rssBefore: rows[summaryAt - 1][1],
              rssAfter: rows[summaryAt + 1][1],
            }
          : undefined
      const highest = (from, to) => Math.max(0, ...steps.slice(from, to).map((s) => s.high))
      results.push({
        label,
        wall,
        cpu: rows.at(-1)[0],
        requests: stamps.length,
        connections: new Set(stamps.map((s) => s.port)).size,
        compactions: stamps.filter((s) => s.summary).length,
        early: at(1, WINDOW + 1),
        late: at(steps.length - WINDOW, steps.length),
        beforeCompaction: compactedAt === undefined ? undefined : at(compactedAt - WINDOW, compactedAt),
        peakBefore: highest(0, compactedAt ?? steps.length),
        peakAfter: compactedAt === undefined ? undefined : highest(compactedAt, steps.length),
        endRss: steps.at(-1).rss,
        compaction,
        reclaims,
        // RSS falling after compaction: the RSS at the last step before it, and the lowest RSS of
        // the 300 steps after it (the heap shrinks at the next mark-compacts, not at once).
        rssBefore: compactedAt === undefined ? undefined : steps[compactedAt - 1].rss,
        rssLowAfter:
          compactedAt === undefined
            ? undefined
            : Math.min(...steps.slice(compactedAt, compactedAt + 300).map((s) => s.rss)),
        heap,
        // Sampled peak RSS up to each checkpoint step, and the RSS at it.
        // (the last checkpoint stands for the last step when a few steps short of it: the
        // summary request and the step after it are not counted as steps)
        checkpoints: CHECKPOINTS.map((k) => (k > steps.length && k - steps.length <= 10 ? steps.length : k))
          .filter((k) => k <= steps.length)
          .map((k) => [k, highest(0, k), steps[k - 1].rss]),
        maxRSS,
      })
    }
  }
  server.close()
  const zeroAfter = await nodeZero()
  const loaded = zeroAfter > 1.5 * zeroBefore
  console.log(
    `\n== real one-shot (dsh --profile headless, DeepSeek adapter over loopback HTTP), ${STEPS} steps of ${RESULT}-byte reads${TEXT_DELTAS ? `, each after ${TEXT_DELTAS} streamed text deltas` : ''}`,
  )
  console.log(
    `node -e 0: ${zeroBefore.toFixed(0)} ms before, ${zeroAfter.toFixed(0)} ms after${loaded ? '  [LOADED: the machine slowed down during the run]' : ''}`,
  )
  const line = (name, w) =>
    `  ${name.padEnd(28)} interval ${w.ms.toFixed(2).padStart(6)} ms   CPU ${w.cpu.toFixed(2).padStart(6)} ms   context ${mb(w.bytes)}`
  for (const r of results) {
    console.log(
      `${r.label}: ${r.requests} requests on ${r.connections} connection(s), ${r.compactions} compactions, wall ${(r.wall / 1000).toFixed(1)} s, CPU ${(r.cpu / 1000).toFixed(1)} s`,
    )
    console.log(line(`steps 2-${WINDOW + 1}`, r.early))
    if (r.beforeCompaction) console.log(line(`${WINDOW} before 1st compaction`, r.beforeCompaction))
    console.log(line(`last ${WINDOW} steps`, r.late))
    const ref = r.beforeCompaction ?? r.late
    console.log(
      `  late/early: interval ${(ref.ms / r.early.ms).toFixed(2)}x, CPU ${(ref.cpu / r.early.cpu).toFixed(2)}x (at ${mb(ref.bytes)} of context)`,
    )
    console.log(
      `  RSS: peak ${(r.maxRSS / 2 ** 20).toFixed(0)} MB (kernel high-water); sampled peak ` +
        (r.peakAfter === undefined
          ? `${(r.peakBefore / 2 ** 20).toFixed(0)} MB`
          : `before the 1st compaction ${(r.peakBefore / 2 ** 20).toFixed(0)} MB, after it ${(r.peakAfter / 2 ** 20).toFixed(0)} MB`) +
        `; at the end ${(r.endRss / 2 ** 20).toFixed(0)} MB`,
    )
    if (r.compaction)
      console.log(
        `  1st compaction: RSS ${(r.compaction.rssBefore / 2 ** 20).toFixed(0)} MB at the request before it -> ${(r.compaction.rssAfter / 2 ** 20).toFixed(0)} MB at the request after it (${r.compaction.rssAfter < r.compaction.rssBefore ? 'falls' : 'does not fall'}); CPU of the compaction step ${r.compaction.cpu.toFixed(0)} ms`,
      )
    for (const [cpu, before, after] of r.reclaims)
      console.log(
        `  memory-reducing collection after a compaction: CPU ${cpu.toFixed(0)} ms, RSS ${(before / 2 ** 20).toFixed(0)} -> ${(after / 2 ** 20).toFixed(0)} MB`,
      )
    if (r.rssBefore !== undefined)
      console.log(
        `  RSS at the step before the 1st compaction ${(r.rssBefore / 2 ** 20).toFixed(0)} MB, lowest in the 300 steps after it ${(r.rssLowAfter / 2 ** 20).toFixed(0)} MB`,
      )
    if (process.env.BENCH_HEAP_STATS)
      for (const [k, spaces, external] of r.heap) {
        const part = (name) =>
          spaces[name] ? `${(spaces[name][0] / 2 ** 20).toFixed(0)}/${(spaces[name][1] / 2 ** 20).toFixed(0)}` : '-'
        console.log(
          `  request ${String(k).padStart(5)}: V8 MB committed/used new ${part('new_space')} old ${part('old_space')} large ${part('large_object_space')} code ${part('code_space')}, external ${(external / 2 ** 20).toFixed(0)} MB`,
        )
      }
    for (const [k, peak, rss] of r.checkpoints)
      console.log(
        `  step ${String(k).padStart(5)}: sampled peak so far ${(peak / 2 ** 20).toFixed(0)} MB, RSS ${(rss / 2 ** 20).toFixed(0)} MB`,
      )
  }
  rmSync(root, { recursive: true, force: true })
}
