#!/usr/bin/env node
// Session load time per persistence backend. Writes one session of BENCH_EVENTS events (default
// 100,000: streamed chunks, messages and tool results of a few KB) with each backend, then, each in
// a fresh child process, times a load plus `new Session({events})` plus `deriveMessages()`, and
// prints it beside a baseline measured in the same run: reading the plain JSONL and JSON.parse of
// every line. Also prints file sizes and peak RSS of each child.
//   node bench/session-load.mjs            BENCH_EVENTS=10000 node bench/session-load.mjs
import { register } from 'tsx/esm/api'
import { spawnSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { performance } from 'node:perf_hooks'
import { fileURLToPath } from 'node:url'

register()
const here = fileURLToPath(import.meta.url)
const pkg = (p) => new URL(`../packages/session/${p}`, import.meta.url).href
const BACKENDS = {
  'jsonl-zstd': {
    module: pkg('session-persistence-jsonl/src/index.ts'),
    config: (root) => ({ root: join(root, 'zstd'), compression: 'zstd' }),
  },
  'jsonl-raw': {
    module: pkg('session-persistence-jsonl/src/index.ts'),
    config: (root) => ({ root: join(root, 'raw'), compression: 'none' }),
  },
  sqlite: {
    module: pkg('session-persistence-sqlite/src/index.ts'),
    config: (root) => ({ path: join(root, 'sessions.sqlite') }),
  },
}

async function mount(name, root) {
  const { Context } = await import('cordis')
  const plugin = (await import(BACKENDS[name].module)).default
  const ctx = new Context()
  const fiber = ctx.plugin(plugin, BACKENDS[name].config(root))
  await fiber
  return { p: ctx.sessionPersistence, dispose: () => fiber.dispose() }
}

function buildEvents(count) {
  const events = []
  let time = 1_700_000_000_000
  const push = (type, data) => events.push({ type, seq: events.length, time: time++, data })
  const blob = (n, seed) => `${seed} `.padEnd(n, 'lorem ipsum dolor sit amet, consectetur adipiscing elit; ')
  for (let turn = 0; events.length < count; turn++) {
    push('turn/start', { turn })
    push('step/start', { turn, step: 0 })
    push('user/message', {
      content: [{ type: 'text', text: `task ${turn}: ${blob(300, turn)}` }],
      source: { kind: 'human' },
    })
    let text = ''
    for (let i = 0; i < 60; i++) {
      const delta = `word${i} and more `
      text += delta
      push('assistant/chunk', { chunk: { kind: 'text-delta', text: delta } })
    }
    const callId = `call-${turn}`
    push('assistant/message', {
      message: {
        role: 'assistant',
        content: [
          { type: 'text', text },
          { type: 'tool-call', callId, name: 'read', arguments: '{"file_path":"src/a.ts"}' },
        ],
      },
      usage: { input: 1000, output: 100 },
    })
    push('tool/call', { callId, name: 'read', arguments: '{"file_path":"src/a.ts"}' })
    push('tool/result', {
      message: {
        role: 'tool',
        callId,
        name: 'read',
        content: [{ type: 'text', text: blob(3000 + (turn % 5) * 500, turn) }],
      },
    })
    push('step/end', { turn, step: 0 })
    push('turn/end', { turn, reason: 'completed' })
  }
  return events
}

if (process.argv[2] === '--child') {
  const [, , , mode, root, id] = process.argv
  const t0 = performance.now()
  let count
  if (mode === 'baseline') {
    const text = readFileSync(join(root, 'baseline.jsonl'), 'utf8')
    const events = []
    for (const line of text.split('\n')) if (line) events.push(JSON.parse(line))
    count = events.length
  } else {
    const { Session } = await import('../packages/core/session/src/index.ts')
    const { p, dispose } = await mount(mode, root)
    const loaded = await p.inspect(id)
    const session = new Session({ id, cwd: loaded.header.cwd, events: loaded.events })
    count = session.deriveMessages().length && session.length
    await dispose()
  }
  const ms = performance.now() - t0
  process.stdout.write(JSON.stringify({ ms, count, rssMb: process.resourceUsage().maxRSS / 1024 }))
  process.exit(0)
}

const TARGET = Number(process.env.BENCH_EVENTS ?? 100_000)
const root = mkdtempSync(join(tmpdir(), 'dsh-bench-load-'))
try {
  const events = buildEvents(TARGET)
  const COUNT = events.length
  const rawText = events.map((e) => JSON.stringify(e)).join('\n') + '\n'
  const { writeFileSync } = await import('node:fs')
  writeFileSync(join(root, 'baseline.jsonl'), rawText)
  const rawBytes = Buffer.byteLength(rawText)
  const sizes = {}
  for (const name of Object.keys(BACKENDS)) {
    const { p, dispose } = await mount(name, root)
    await p.create({ id: 'bench', cwd: '/bench' })
    for (let i = 0; i < events.length; i += 500) void p.append('bench', events.slice(i, i + 500))
    await p.close('bench')
    if (name === 'sqlite') sizes[name] = statSync(join(root, 'sessions.sqlite')).size
    else sizes[name] = statSync(await p.logPath('bench')).size
    await dispose()
  }
  const run = (mode) => {
    const out = spawnSync(process.execPath, ['--import', 'tsx', here, '--child', mode, root, 'bench'], {
      encoding: 'utf8',
    })
    if (out.status !== 0) throw new Error(`${mode} child failed: ${out.stderr}`)
    return JSON.parse(out.stdout)
  }
  const baseline = run('baseline')
  console.log(`session-load: ${COUNT} events, raw JSONL ${(rawBytes / 1e6).toFixed(1)} MB`)
  console.log(
    `baseline   read + JSON.parse every line: ${baseline.ms.toFixed(0)} ms, peak RSS ${baseline.rssMb.toFixed(0)} MB`,
  )
  for (const name of Object.keys(BACKENDS)) {
    const r = run(name)
    if (r.count !== COUNT) throw new Error(`${name} loaded ${r.count} events, expected ${COUNT}`)
    console.log(
      `${name.padEnd(10)} load + Session + deriveMessages: ${r.ms.toFixed(0)} ms (${(r.ms / baseline.ms).toFixed(1)}x baseline), ` +
        `file ${(sizes[name] / 1e6).toFixed(2)} MB (${((sizes[name] / rawBytes) * 100).toFixed(0)}% of raw), peak RSS ${r.rssMb.toFixed(0)} MB`,
    )
  }
} finally {
  rmSync(root, { recursive: true, force: true })
}
