#!/usr/bin/env node
// Time from sending `session/prompt` to receiving the first `agent_message_chunk` over the real
// `dsh-acp` stdio, minus the mock model's own latency (an HTTP request straight to the same
// @dsh/llm-mock-server until its first content frame), measured alternately in the same run.
// Prints medians; the overhead target is under 20 ms. BENCH_RUNS (default 20).
import { spawn } from 'node:child_process'
import { mkdtempSync } from 'node:fs'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Writable } from 'node:stream'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { performance } from 'node:perf_hooks'

const appPkg = new URL('../packages/acp/acp-app/package.json', import.meta.url)
const req = createRequire(appPkg)
const acp = await import(pathToFileURL(req.resolve('@agentclientprotocol/sdk')).href)
const { startMockServer } = await import(
  new URL('../packages/test-support/llm-mock-server/dist/index.js', import.meta.url).href
)

const RUNS = Number(process.env.BENCH_RUNS ?? 20)
const bin = fileURLToPath(new URL('../packages/acp/acp-app/bin/dsh-acp.mjs', import.meta.url))
const root = mkdtempSync(join(tmpdir(), 'dsh-bench-acp-'))
const answer = { text: 'The first chunk of the answer.' }
const server = await startMockServer({ steps: Array.from({ length: 2 * RUNS + 1 }, () => answer) })

const child = spawn(process.execPath, [bin], {
  cwd: root,
  env: {
    PATH: process.env.PATH,
    HOME: root,
    DSH_HOME: join(root, 'home'),
    DEEPSEEK_BASE_URL: server.baseURL,
    DEEPSEEK_API_KEY: 'sk-bench',
  },
  stdio: ['pipe', 'pipe', 'inherit'],
})
const readable = new ReadableStream({
  start(controller) {
    child.stdout.on('data', (d) => controller.enqueue(new Uint8Array(d)))
    child.stdout.on('end', () => controller.close())
  },
})
let onChunk = () => {}
const app = acp.client({ name: 'bench' }).onNotification('session/update', ({ params }) => {
  if (params.update.sessionUpdate === 'agent_message_chunk') onChunk()
})
const conn = app.connect(acp.ndJsonStream(Writable.toWeb(child.stdin), readable))
const agent = conn.agent
await agent.request('initialize', { protocolVersion: acp.PROTOCOL_VERSION, clientCapabilities: {} })
const { sessionId } = await agent.request('session/new', { cwd: root, mcpServers: [] })

async function viaAcp() {
  let first
  const got = new Promise(
    (resolve) =>
      (onChunk = () => {
        first ??= performance.now()
        resolve()
      }),
  )
  const t0 = performance.now()
  const done = agent.request('session/prompt', { sessionId, prompt: [{ type: 'text', text: 'hello' }] })
  await got
  await done
  onChunk = () => {}
  return first - t0
}

/** The mock's own latency: request to the first frame carrying content, over loopback HTTP. */
async function direct() {
  const t0 = performance.now()
  const res = await fetch(`${server.baseURL}/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: 'Bearer sk-bench' },
    body: JSON.stringify({ model: 'deepseek-v4-flash', stream: true, messages: [{ role: 'user', content: 'hello' }] }),
  })
  const decoder = new TextDecoder()
  let buffered = ''
  let first
  for await (const part of res.body) {
    buffered += decoder.decode(part, { stream: true })
    if (first === undefined && /"content":"[^"]/.test(buffered)) first = performance.now()
  }
  return first - t0
}

await viaAcp() // warm-up: first model request, JIT, sockets
const a = []
const d = []
for (let i = 0; i < RUNS; i++) {
  d.push(await direct())
  a.push(await viaAcp())
}
child.stdin.end()
await new Promise((r) => child.on('close', r))
conn.close()
await server.close()
const median = (xs) => [...xs].sort((x, y) => x - y)[Math.floor(xs.length / 2)]
const ma = median(a)
const md = median(d)
console.log(`runs: ${RUNS} each (text answer, mock model on loopback)`)
console.log(`mock alone, request -> first content frame:         ${md.toFixed(1)} ms`)
console.log(`dsh-acp, session/prompt -> first agent_message_chunk: ${ma.toFixed(1)} ms`)
console.log(`overhead (difference of medians): ${(ma - md).toFixed(1)} ms   (target: under 20 ms)`)
