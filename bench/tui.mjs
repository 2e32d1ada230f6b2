#!/usr/bin/env node
// The terminal UI in a real PTY (node-pty) against @dsh/llm-mock-server, with baselines taken in
// the same run:
// - start to first frame: `dsh --profile tui` until its status line is on screen, against a bare
//   `node -e` that prints one line (the floor of starting node in a PTY) and against the one-shot
//   profile booting, running `/help` and exiting (`dsh -p /help`: the same tree minus the UI);
// - idle RSS 15 s after the first frame, against an idle bare node process (goal: under 100 MB);
// - keystroke to echo: a typed character until the UI has redrawn it, against `cat` in the same
//   kind of PTY (the kernel's own echo);
// - frames per second while 2,000 lines stream (synchronized-output frames counted in the byte
//   stream), with the bytes written per streamed line: once at a model's pace (one line every
//   5 ms) and once flooded (1 ms), where the per-chunk cost of the agent pipeline, not the
//   renderer, sets the pace.
// BENCH_RUNS (default 3) start-ups are measured; medians are printed.
import { mkdirSync, mkdtempSync, readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { performance } from 'node:perf_hooks'

const req = createRequire(new URL('../bundles/tui/package.json', import.meta.url))
const pty = req('node-pty')
const { startMockServer } = await import(
  new URL('../packages/test-support/llm-mock-server/dist/index.js', import.meta.url).href
)

const RUNS = Number(process.env.BENCH_RUNS ?? 3)
const COLS = 100
const ROWS = 30
const bin = fileURLToPath(new URL('../packages/boot/cli/bin/dsh.mjs', import.meta.url))
const sleep = (ms) => new Promise((r) => setTimeout(r, ms))
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]
const rssMb = (pid) => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))[1]) / 1024

function spawn(file, args, env, cwd) {
  const term = pty.spawn(file, args, { name: 'xterm-256color', cols: COLS, rows: ROWS, cwd, env })
  let out = ''
  term.onData((d) => (out += d))
  return { term, output: () => out, mark: () => out.length }
}

async function until(test, timeoutMs = 60_000) {
  const deadline = Date.now() + timeoutMs
  while (!test()) {
    if (Date.now() > deadline) throw new Error('bench: timed out')
    await sleep(2)
  }
}

function workspace() {
  const root = mkdtempSync(join(tmpdir(), 'dsh-bench-tui-'))
  mkdirSync(join(root, 'home'))
  mkdirSync(join(root, 'work'))
  return root
}

const streamed = []
for (let n = 1; n <= 2000; n++) {
  streamed.push({ text: `- line ${n} of the streamed reply\n` })
  if (n % 10 === 0) streamed.push({ text: '\n' })
}
const server = await startMockServer({
  steps: [
    { events: streamed, chunkDelayMs: 5 },
    { events: streamed, chunkDelayMs: 1 },
  ],
})
const envFor = (root) => ({
  PATH: process.env.PATH,
  HOME: root,
  TERM: 'xterm-256color',
  DSH_HOME: join(root, 'home'),
  DEEPSEEK_BASE_URL: server.baseURL,
  DEEPSEEK_API_KEY: 'sk-bench',
})

// 1. Start to first frame.
const starts = []
const baseStarts = []
const headlessRuns = []
for (let i = 0; i < RUNS; i++) {
  const root = workspace()
  let t0 = performance.now()
  const base = spawn(process.execPath, ['-e', 'process.stdout.write("ready\\n")'], envFor(root), root)
  await until(() => base.output().includes('ready'))
  baseStarts.push(performance.now() - t0)
  base.term.kill()
  t0 = performance.now()
  const headless = spawn(process.execPath, [bin, '-p', '/help'], envFor(root), join(root, 'work'))
  await new Promise((resolve) => headless.term.onExit(resolve))
  headlessRuns.push(performance.now() - t0)
  t0 = performance.now()
  const app = spawn(process.execPath, [bin, '--profile', 'tui'], envFor(root), join(root, 'work'))
  await until(() => app.output().includes('workspace-write'))
  starts.push(performance.now() - t0)
  app.term.kill()
  await sleep(200)
}

// 2-4 on one running UI.
const root = workspace()
const app = spawn(process.execPath, [bin, '--profile', 'tui'], envFor(root), join(root, 'work'))
await until(() => app.output().includes('workspace-write'))
const idleBase = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], envFor(root), root)
await sleep(15_000)
const rss = rssMb(app.term.pid)
const baseRss = rssMb(idleBase.term.pid)
idleBase.term.kill()

// Keystroke to echo: each character until the output written after it contains it.
async function echoLatency(session, count) {
  const times = []
  for (let i = 0; i < count; i++) {
    const ch = String.fromCharCode(97 + (i % 26))
    const from = session.mark()
    const t0 = performance.now()
    session.term.write(ch)
    await until(() => session.output().slice(from).includes(ch), 5000)
    times.push(performance.now() - t0)
    await sleep(20)
  }
  return times
}
const echo = await echoLatency(app, 30)
const cat = spawn('cat', [], envFor(root), root)
await sleep(300)
const catEcho = await echoLatency(cat, 30)
cat.term.kill()
// Clear the typed text before streaming.
app.term.write('\x15')
await sleep(100)

// Frames per second while streaming.
async function stream(label) {
  app.term.write('\x15stream')
  await sleep(100)
  const before = app.mark()
  app.term.write('\r')
  await until(() => app.output().slice(before).includes('line 1 of the'))
  const t0 = performance.now()
  const start = app.mark()
  await until(() => app.output().slice(before).includes('line 2000 of the'), 180_000)
  const seconds = (performance.now() - t0) / 1000
  const written = app.output().slice(start)
  const frames = written.split('\x1b[?2026h').length - 1
  await until(() => /Working/.test(app.output().slice(-2000)) === false, 30_000).catch(() => {})
  await sleep(1000)
  return `${label}: ${seconds.toFixed(2)} s, ${frames} frames, ${(frames / seconds).toFixed(1)} frames/s, ${(written.length / 2000).toFixed(0)} bytes written per line`
}
const paced = await stream('streaming 2,000 lines at one line per 5 ms')
const flooded = await stream('streaming 2,000 lines at one line per 1 ms')
app.term.kill()
await server.close()

const ms = (x) => `${x.toFixed(1)} ms`
console.log(
  `start to first frame: ${ms(median(starts))} (bare node in a PTY: ${ms(median(baseStarts))}, ratio ${(median(starts) / median(baseStarts)).toFixed(1)}x; dsh -p /help to exit: ${ms(median(headlessRuns))}, ratio ${(median(starts) / median(headlessRuns)).toFixed(2)}x; runs ${RUNS})`,
)
console.log(
  `idle RSS at 15 s: ${rss.toFixed(1)} MB (idle bare node: ${baseRss.toFixed(1)} MB; ratio ${(rss / baseRss).toFixed(1)}x; goal under 100 MB)`,
)
console.log(
  `keystroke to echo: median ${ms(median(echo))}, worst ${ms(Math.max(...echo))} (cat in a PTY: ${ms(median(catEcho))}; ratio ${(median(echo) / median(catEcho)).toFixed(1)}x)`,
)
console.log(paced)
console.log(flooded)
process.exit(0)
