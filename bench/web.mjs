#!/usr/bin/env node
// Web host benchmark (issue 16). Three measurements, each against a baseline measured in the same
// run on the same machine state, printed with their ratios:
//   1. launch: `dsh web --no-open --port 0` from spawn to the first HTTP 200 of GET /, and its RSS
//      then (VmRSS of the process), against a `node -e` node:http server answering 200 "ok";
//      runs alternate (RUNS, default 7), medians. Goal: under 300 ms and 100 MB. Also the first
//      answer of an API call (sessions.list, sent when the URL appears; it waits for every row).
//   2. history: `sessions.history` of a stored 2,000-event session (BENCH_EVENTS), the first call
//      (the log is read from disk) and the median of warm calls, against a node:http server that
//      answers the same JSON bytes from memory.
//   3. fan-out: K concurrent SSE clients on /api/events/session/<id> each reading the whole
//      2,000-event replay; cost per added client = (T(K) - T(1)) / (K - 1), against a node:http
//      server writing the same SSE bytes to K clients.
//   4. live fan-out: 1, 10 and 50 SSE clients on one session while a turn streams DELTAS model
//      deltas from @dsh/llm-mock-server; time from the prompt until every client has the turn's
//      end; per-client overhead = (T(K) - T(1)) / (K - 1), reported against the 1-client run.
// A part that cannot run (a missing method, a failing boot) prints why instead of a number.
// PARTS picks parts (launch,history,fanout,live; default all). BENCH_BASE=/other/checkout also
// measures that checkout's dsh in the same run (launch runs alternate with this one's), printed
// as "base" rows with this checkout's ratio against it. BENCH_NODE_ARGS adds node flags to this
// checkout's dsh (for --cpu-prof).
//   node bench/web.mjs           RUNS=3 BENCH_EVENTS=2000 FANOUT=50 DELTAS=500 node bench/web.mjs
import { spawn } from 'node:child_process'
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { request } from 'node:http'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { performance } from 'node:perf_hooks'
import { fileURLToPath, pathToFileURL } from 'node:url'

const RUNS = Number(process.env.RUNS ?? 7)
const EVENTS = Number(process.env.BENCH_EVENTS ?? 2000)
const FANOUT = Number(process.env.FANOUT ?? 50)
const DELTAS = Number(process.env.DELTAS ?? 500)
const bin = fileURLToPath(new URL('../packages/boot/cli/bin/dsh.mjs', import.meta.url))
const PARTS = new Set((process.env.PARTS ?? 'launch,history,fanout,live').split(','))
const BASE = process.env.BENCH_BASE
const baseBin = BASE ? join(BASE, 'packages/boot/cli/bin/dsh.mjs') : undefined
const root = mkdtempSync(join(tmpdir(), 'dsh-bench-web-'))
const home = join(root, 'home')
const dshHome = join(home, '.dsh')
mkdirSync(dshHome, { recursive: true })
const env = { PATH: process.env.PATH, HOME: home, DSH_HOME: dshHome, DEEPSEEK_API_KEY: 'sk-bench-not-used' }

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b)
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2
}
const ms = (x) => `${x.toFixed(1)} ms`
const rssMb = (pid) => {
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))
    return m ? Number(m[1]) / 1024 : NaN
  } catch {
    return NaN
  }
}

function httpGet(url, headers = {}) {
  return new Promise((resolve, reject) => {
    const req = request(url, { headers, agent: false }, (res) => {
      const chunks = []
      res.on('data', (c) => chunks.push(c))
      res.on('end', () => resolve({ status: res.statusCode, body: Buffer.concat(chunks) }))
    })
    req.on('error', reject)
    req.end()
  })
}

/** Spawns a server that prints its URL on stdout; resolves at its first 200 with the time and RSS. */
function launch(cmd, args, options = {}) {
  const t0 = performance.now()
  const child = spawn(cmd, args, { env: options.env ?? env, stdio: ['ignore', 'pipe', 'pipe'] })
  let out = ''
  let err = ''
  child.stderr.on('data', (c) => (err += c))
  return new Promise((resolve, reject) => {
    let done = false
    let seen = false
    const fail = (why) => {
      if (done) return
      done = true
      child.kill('SIGKILL')
      reject(new Error(`${why}${err ? `: ${err.trim().split('\n').slice(-3).join(' | ')}` : ''}`))
    }
    child.once('exit', (code) => fail(`exited ${code} before answering`))
    child.stdout.on('data', async (c) => {
      out += c
      const url = /http:\/\/[0-9.]+:\d+/.exec(out)?.[0]
      if (!url || done || seen) return
      seen = true
      // An API call sent as the URL appears: answered once every row is up.
      const api = options.api
        ? postRaw(url, 'sessions.list', {}).then(
            () => performance.now() - t0,
            () => NaN,
          )
        : Promise.resolve(NaN)
      for (;;) {
        try {
          const r = await httpGet(url + '/')
          if (r.status === 200) break
        } catch {
          // not listening yet
        }
        if (done) return
      }
      const elapsed = performance.now() - t0
      const rss = rssMb(child.pid)
      const apiMs = await api
      done = true
      resolve({ child, url, ms: elapsed, rss, apiMs })
    })
    setTimeout(() => fail('no 200 within 30 s'), 30_000).unref()
  })
}

async function stop(child) {
  if (child.exitCode !== null) return
  const exited = new Promise((r) => child.once('exit', r))
  child.kill('SIGTERM')
  const timer = setTimeout(() => child.kill('SIGKILL'), 5000)
  await exited
  clearTimeout(timer)
}

const BASELINE = `const fs=require('fs'),http=require('http');const j=process.env.JSON_FILE?fs.readFileSync(process.env.JSON_FILE):null;const s=process.env.SSE_FILE?fs.readFileSync(process.env.SSE_FILE):null;http.createServer((q,r)=>{if(q.url.startsWith('/json')){r.writeHead(200,{'content-type':'application/json'});r.end(j)}else if(q.url.startsWith('/sse')){r.writeHead(200,{'content-type':'text/event-stream'});r.write(s)}else r.end('ok')}).listen(0,'127.0.0.1',function(){console.log('http://127.0.0.1:'+this.address().port+'/')})`

// BENCH_NODE_ARGS: node flags for this checkout's dsh web (e.g. "--cpu-prof --cpu-prof-dir=/tmp/p").
const nodeArgs = (which) =>
  which === bin && process.env.BENCH_NODE_ARGS ? process.env.BENCH_NODE_ARGS.split(' ').filter(Boolean) : []
const dshWeb = (extraEnv = {}, which = bin) =>
  launch(process.execPath, [...nodeArgs(which), which, 'web', '--no-open', '--port', '0'], {
    api: true,
    env: { ...env, ...extraEnv },
  })

function postRaw(url, method, params) {
  return new Promise((resolve, reject) => {
    const body = JSON.stringify(params)
    const req = request(
      `${url}/api/${method}`,
      {
        method: 'POST',
        agent: false,
        headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
      },
      (res) => {
        const chunks = []
        res.on('data', (c) => chunks.push(c))
        res.on('end', () =>
          res.statusCode === 200
            ? resolve(Buffer.concat(chunks))
            : reject(new Error(`${method}: HTTP ${res.statusCode}`)),
        )
      },
    )
    req.on('error', reject)
    req.end(body)
  })
}
const nodeServer = (extra = {}) => launch(process.execPath, ['-e', BASELINE], { env: { ...env, ...extra } })

function report(label, value, base, unit, goal) {
  console.log(`${label.padEnd(34)} ${value} (baseline ${base}, ${unit})${goal ? `  goal ${goal}` : ''}`)
}

// ---- 1. launch to first 200 ----------------------------------------------------------------
let launchOk = !PARTS.has('launch')
if (PARTS.has('launch')) {
  try {
    // A first boot creates the profile under DSH_HOME and warms the file cache, as after any first use.
    await stop((await dshWeb()).child)
    if (baseBin) await stop((await dshWeb({}, baseBin)).child)
    await stop((await nodeServer()).child)
    const d = [],
      n = [],
      dr = [],
      nr = [],
      da = [],
      b = [],
      br = [],
      ba = []
    for (let i = 0; i < RUNS; i++) {
      const a = await dshWeb()
      d.push(a.ms), dr.push(a.rss), da.push(a.apiMs)
      await stop(a.child)
      if (baseBin) {
        const o = await dshWeb({}, baseBin)
        b.push(o.ms), br.push(o.rss), ba.push(o.apiMs)
        await stop(o.child)
      }
      const c = await nodeServer()
      n.push(c.ms), nr.push(c.rss)
      await stop(c.child)
    }
    const [md, mn, mdr, mnr] = [median(d), median(n), median(dr), median(nr)]
    console.log(`web bench: launch median of ${RUNS} runs each`)
    report('dsh web → first 200', ms(md), ms(mn), `ratio ${(md / mn).toFixed(2)}x`, '< 300 ms')
    report(
      'dsh web RSS at first 200',
      `${mdr.toFixed(0)} MB`,
      `${mnr.toFixed(0)} MB`,
      `ratio ${(mdr / mnr).toFixed(2)}x`,
      '< 100 MB',
    )
    const mda = median(da)
    report('dsh web → first API answer', ms(mda), ms(mn), `ratio ${(mda / mn).toFixed(2)}x`)
    if (baseBin) {
      const [mb, mbr, mba] = [median(b), median(br), median(ba)]
      report('base dsh web → first 200', ms(mb), ms(mn), `this checkout ${(md / mb).toFixed(2)}x of base`)
      report(
        'base dsh web RSS at first 200',
        `${mbr.toFixed(0)} MB`,
        `${mnr.toFixed(0)} MB`,
        `this checkout ${(mdr / mbr).toFixed(2)}x of base`,
      )
      report('base dsh web → first API answer', ms(mba), ms(mn), `this checkout ${(mda / mba).toFixed(2)}x of base`)
    }
    launchOk = true
  } catch (error) {
    console.log(`launch: not measured: ${error.message}`)
  }
}

// ---- 2 and 3 need a stored session ---------------------------------------------------------
function buildEvents(count) {
  const events = []
  let time = 1_700_000_000_000
  const push = (type, data) => events.push({ type, seq: events.length, time: time++, data })
  for (let turn = 0; events.length < count; turn++) {
    push('turn/start', { turn })
    push('step/start', { turn, step: 0 })
    push('user/message', {
      content: [{ type: 'text', text: `task ${turn}: `.padEnd(300, 'lorem ipsum ') }],
      source: { kind: 'human' },
    })
    let text = ''
    for (let i = 0; i < 20 && events.length < count - 6; i++) {
      text += `word${i} `
      push('assistant/chunk', { chunk: { kind: 'text-delta', text: `word${i} ` } })
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
    push('tool/result', {
      message: { role: 'tool', callId, name: 'read', content: [{ type: 'text', text: ''.padEnd(1500, 'file text ') }] },
    })
    push('step/end', { turn, step: 0 })
    push('turn/end', { turn, reason: 'completed' })
  }
  return events.slice(0, count)
}

async function writeSession(id, cwd) {
  const { Context } = await import('cordis')
  const mod = await import(
    pathToFileURL(
      fileURLToPath(new URL('../packages/session/session-persistence-jsonl/dist/index.js', import.meta.url)),
    ).href
  )
  const ctx = new Context()
  const fiber = ctx.plugin(mod.default, { root: join(dshHome, 'sessions'), compression: 'zstd' })
  await fiber
  const p = ctx.get('sessionPersistence')
  await p.create({ id, cwd })
  const events = buildEvents(EVENTS)
  for (let i = 0; i < events.length; i += 500) void p.append(id, events.slice(i, i + 500))
  await p.close(id)
  await fiber.dispose()
  return events.length
}

async function post(url, method, params) {
  const res = await fetch(`${url}/api/${method}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', origin: url },
    body: JSON.stringify(params),
  })
  const text = await res.text()
  if (res.status !== 200) throw new Error(`${method}: HTTP ${res.status} ${text.slice(0, 200)}`)
  return text
}

/** Reads an SSE stream until the event with id `lastId`; resolves with the bytes read. */
function readSse(url, lastId) {
  return new Promise((resolve, reject) => {
    const req = request(url, { agent: false, headers: { accept: 'text/event-stream' } }, (res) => {
      if (res.statusCode !== 200) {
        let body = ''
        res.on('data', (c) => (body += c))
        res.on('end', () => reject(new Error(`HTTP ${res.statusCode} ${body.slice(0, 200)}`)))
        return
      }
      const chunks = []
      let tail = ''
      const marker = `id: ${lastId}\n`
      res.on('data', (c) => {
        chunks.push(c)
        tail = (tail + c.toString('utf8')).slice(-4096)
        if (tail.includes(marker) && /\n\n$/.test(tail)) {
          req.destroy()
          resolve(Buffer.concat(chunks))
        }
      })
      res.on('end', () => reject(new Error(`stream ended before id ${lastId}`)))
    })
    req.on('error', (e) => (e.code === 'ECONNRESET' ? undefined : reject(e)))
    req.end()
  })
}

async function fanout(url, lastId, k) {
  const t0 = performance.now()
  await Promise.all(Array.from({ length: k }, () => readSse(url, lastId)))
  return performance.now() - t0
}

/** Parts 2 and 3 against one dsh (`which`); rows labelled with `label`. */
async function historyAndFanout(which, label, id, count) {
  const web = await dshWeb({}, which)
  let base
  try {
    // ---- 2. history page ----
    if (PARTS.has('history')) {
      try {
        const t0 = performance.now()
        const page = await post(web.url, 'sessions.history', { sessionId: id, fromSeq: 0, limit: count })
        const cold = performance.now() - t0
        const warm = []
        for (let i = 0; i < RUNS * 3; i++) {
          const t = performance.now()
          await post(web.url, 'sessions.history', { sessionId: id, fromSeq: 0, limit: count })
          warm.push(performance.now() - t)
        }
        const jsonFile = join(root, 'page.json')
        writeFileSync(jsonFile, page)
        base = await nodeServer({ JSON_FILE: jsonFile, SSE_FILE: jsonFile })
        const b = []
        for (let i = 0; i < RUNS * 3; i++) {
          const t = performance.now()
          await httpGet(base.url + '/json')
          b.push(performance.now() - t)
        }
        await stop(base.child)
        base = undefined
        const [mw, mb] = [median(warm), median(b)]
        console.log(
          `${label}history: sessions.history of a ${count}-event stored session, ${(page.length / 1e6).toFixed(2)} MB of JSON`,
        )
        report(`${label}first page (read from disk)`, ms(cold), ms(mb), `ratio ${(cold / mb).toFixed(1)}x`)
        report(`${label}warm page, median of ${warm.length}`, ms(mw), ms(mb), `ratio ${(mw / mb).toFixed(1)}x`)
      } catch (error) {
        console.log(`${label}history: not measured: ${error.message}`)
      }
    }
    // ---- 3. SSE fan-out of the replay ----
    if (PARTS.has('fanout')) {
      try {
        const lastId = count - 1
        const streamUrl = `${web.url}/api/events/session/${id}?after=-1`
        const sample = await readSse(streamUrl, lastId) // warm: the session is open from here on
        const sseFile = join(root, 'replay.sse')
        writeFileSync(sseFile, sample.toString('utf8').replace(/^[\s\S]*?(?=(id|event|data): )/, ''))
        base = await nodeServer({ SSE_FILE: sseFile, JSON_FILE: sseFile })
        const one = median([
          await fanout(streamUrl, lastId, 1),
          await fanout(streamUrl, lastId, 1),
          await fanout(streamUrl, lastId, 1),
        ])
        const many = median([
          await fanout(streamUrl, lastId, FANOUT),
          await fanout(streamUrl, lastId, FANOUT),
          await fanout(streamUrl, lastId, FANOUT),
        ])
        const bOne = median([
          await fanout(base.url + '/sse', lastId, 1),
          await fanout(base.url + '/sse', lastId, 1),
          await fanout(base.url + '/sse', lastId, 1),
        ])
        const bMany = median([
          await fanout(base.url + '/sse', lastId, FANOUT),
          await fanout(base.url + '/sse', lastId, FANOUT),
          await fanout(base.url + '/sse', lastId, FANOUT),
        ])
        const per = (many - one) / (FANOUT - 1)
        const bPer = (bMany - bOne) / (FANOUT - 1)
        console.log(
          `${label}fan-out: ${FANOUT} SSE clients each reading the ${count}-event replay (${(sample.length / 1e6).toFixed(2)} MB per client)`,
        )
        report(`${label}1 client`, ms(one), ms(bOne), `ratio ${(one / bOne).toFixed(1)}x`)
        report(`${label}${FANOUT} clients`, ms(many), ms(bMany), `ratio ${(many / bMany).toFixed(1)}x`)
        report(`${label}cost per added client`, ms(per), ms(bPer), `ratio ${(per / bPer).toFixed(1)}x`)
      } catch (error) {
        console.log(`${label}fan-out: not measured: ${error.message}`)
      }
    }
  } finally {
    if (base) await stop(base.child)
    await stop(web.child)
  }
}

if (launchOk && (PARTS.has('history') || PARTS.has('fanout'))) {
  const id = 'bench-web-history'
  const cwd = join(root, 'project')
  mkdirSync(cwd)
  let count
  try {
    count = await writeSession(id, cwd)
  } catch (error) {
    console.log(`history, fan-out: not measured: cannot write the fixture session: ${error.message}`)
  }
  if (count) {
    // Base first when there is one: its run leaves the log as a live open would, for both.
    if (baseBin) await historyAndFanout(baseBin, 'base ', id, count)
    await historyAndFanout(bin, '', id, count)
    if (baseBin) await historyAndFanout(baseBin, 'base ', id, count)
  }
}
// ---- 4. live fan-out of model deltas -------------------------------------------------------
/** Connects `k` SSE clients after `after`, resolves once each has its status frame. */
function liveClients(url, k, after) {
  return Promise.all(
    Array.from(
      { length: k },
      () =>
        new Promise((resolve, reject) => {
          const req = request(
            `${url}?after=${after}`,
            { agent: false, headers: { accept: 'text/event-stream' } },
            (res) => {
              const client = { req, done: undefined, seen: 0 }
              let tail = ''
              let status = false
              client.done = new Promise((resolveDone) => {
                res.on('data', (c) => {
                  tail = (tail + c.toString('utf8')).slice(-8192)
                  if (!status && tail.includes('event: status')) {
                    status = true
                    resolve(client)
                  }
                  if (tail.includes('"type":"turn/end"')) {
                    req.destroy()
                    resolveDone()
                  }
                })
              })
            },
          )
          req.on('error', (e) => (e.code === 'ECONNRESET' ? undefined : reject(e)))
          req.end()
        }),
    ),
  )
}

if (launchOk && PARTS.has('live')) {
  const counts = [1, 10, FANOUT].filter((k, i, a) => a.indexOf(k) === i)
  const turns = RUNS * counts.length
  const words = Array.from({ length: DELTAS }, (_, i) => ({ text: `w${i} ` }))
  // This checkout and (with BENCH_BASE) the base one, each with its own scripted model; their
  // turns alternate.
  const targets = [{ label: '', which: bin }, ...(baseBin ? [{ label: 'base ', which: baseBin }] : [])]
  try {
    const mod = await import(
      pathToFileURL(fileURLToPath(new URL('../packages/test-support/llm-mock-server/dist/index.js', import.meta.url)))
        .href
    )
    for (const t of targets) {
      t.mock = await mod.startMockServer({ steps: Array.from({ length: turns }, () => ({ events: words })) })
      t.web = await dshWeb({ DEEPSEEK_BASE_URL: t.mock.baseURL, DSH_PERMISSION_MODE: 'danger-full-access' }, t.which)
      const cwd = join(root, `live-${t.label.trim() || 'this'}`)
      mkdirSync(cwd, { recursive: true })
      const { result } = JSON.parse(await post(t.web.url, 'sessions.create', { cwd }))
      t.id = result.session.sessionId
      t.streamUrl = `${t.web.url}/api/events/session/${t.id}`
      t.times = new Map(counts.map((k) => [k, []]))
    }
    for (let run = 0; run < RUNS; run++) {
      for (const k of counts) {
        for (const t of targets) {
          // Live events only: start after the log's current end.
          const after =
            JSON.parse(await post(t.web.url, 'sessions.history', { sessionId: t.id, fromSeq: 1e9, limit: 1 })).result
              .nextSeq - 1
          const clients = await liveClients(t.streamUrl, k, after)
          const t0 = performance.now()
          await post(t.web.url, 'sessions.prompt', { sessionId: t.id, text: `turn ${run} ${k}` })
          await Promise.all(clients.map((c) => c.done))
          t.times.get(k).push(performance.now() - t0)
          // Let the turn settle (idle) before the next one.
          for (let i = 0; i < 200; i++) {
            const row = JSON.parse(await post(t.web.url, 'sessions.list', {})).result.sessions.find(
              (s) => s.sessionId === t.id,
            )
            if (row.status === 'idle') break
            await new Promise((r) => setTimeout(r, 10))
          }
        }
      }
    }
    console.log(
      `live fan-out: one turn streaming ${DELTAS} model deltas (each a logged event) to K clients, median of ${RUNS}`,
    )
    for (const t of targets) {
      const one = median(t.times.get(1))
      for (const k of counts) {
        const v = median(t.times.get(k))
        if (k === 1) report(`${t.label}1 client: prompt → turn end`, ms(v), ms(one), 'ratio 1.00x')
        else {
          const per = (v - one) / (k - 1)
          report(
            `${t.label}${k} clients`,
            ms(v),
            ms(one),
            `ratio ${(v / one).toFixed(2)}x, +${ms(per)} per added client = ${((per / one) * 100).toFixed(1)}% of the 1-client turn, ${((per * 1000) / DELTAS).toFixed(1)} µs per delta per client`,
          )
        }
      }
    }
  } catch (error) {
    console.log(`live fan-out: not measured: ${error.message}`)
  } finally {
    for (const t of targets) {
      if (t.web) await stop(t.web.child)
      if (t.mock) await t.mock.close()
    }
  }
}
rmSync(root, { recursive: true, force: true })
