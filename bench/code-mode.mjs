#!/usr/bin/env node
// The same 20-call task through the real `dsh --profile headless` bin in three forms, against
// @dsh/llm-mock-server on loopback, alternating in one run (BENCH_RUNS each, default 3):
//   native-seq: native tools, one read per model response (each call waits for the previous result)
//   native-par: native tools, all 20 reads in one model response
//   code:       tools.mode code, one run_code program making the 20 reads and returning a digest
// Per form: model requests, prompt size (request body characters / 4, an estimate of prompt
// tokens), and the median wall time of the whole run. Prints ratios of code mode to each native form.
import { spawn } from 'node:child_process'
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { performance } from 'node:perf_hooks'
import { register } from 'tsx/esm/api'

register()
const { startMockServer } = await import('../packages/test-support/llm-mock-server/src/index.ts')

const RUNS = Number(process.env.BENCH_RUNS ?? 3)
const CALLS = 20
const bin = fileURLToPath(new URL('../packages/boot/cli/bin/dsh.mjs', import.meta.url))
const root = mkdtempSync(join(tmpdir(), 'dsh-bench-code-mode-'))
const cwd = join(root, 'work')
mkdirSync(cwd, { recursive: true })
const names = Array.from({ length: CALLS }, (_, i) => `file${String(i + 1).padStart(2, '0')}.txt`)
// ~2 KB per file: a realistic small source file's worth of text.
for (const [i, name] of names.entries()) {
  writeFileSync(
    join(cwd, name),
    Array.from(
      { length: 40 },
      (_, line) => `file ${i + 1} line ${line + 1}: ${line % 7 === 0 ? 'TODO check this' : 'ordinary content here'}`,
    ).join('\n') + '\n',
  )
}
const patch = join(root, 'code.patch.yml')
writeFileSync(patch, '- id: tools\n  config:\n    mode: code\n')

const read = (name, i) => ({ id: `r${i}`, name: 'read', arguments: { file_path: name } })
const PROGRAM = [
  `const names = ${JSON.stringify(names)}`,
  'let todos = 0',
  'for (const name of names) {',
  '  const text = await tools.read({ file_path: name })',
  '  todos += text.split("\\n").filter((l) => l.includes("TODO")).length',
  '}',
  'return { files: names.length, todos }',
].join('\n')
const forms = {
  'native-seq': { args: [], steps: () => [...names.map((n, i) => ({ toolCalls: [read(n, i)] })), { text: 'done' }] },
  'native-par': { args: [], steps: () => [{ toolCalls: names.map(read) }, { text: 'done' }] },
  code: {
    args: ['--patch', patch],
    steps: () => [{ toolCalls: [{ id: 'p1', name: 'run_code', arguments: { code: PROGRAM } }] }, { text: 'done' }],
  },
}

async function runOnce(form) {
  const server = await startMockServer({ steps: forms[form].steps() })
  const env = {
    PATH: process.env.PATH,
    HOME: root,
    DSH_HOME: join(root, 'home'),
    DEEPSEEK_BASE_URL: server.baseURL,
    DEEPSEEK_API_KEY: 'sk-bench',
    DSH_PERMISSION_MODE: 'danger-full-access',
  }
  const t0 = performance.now()
  const child = spawn(
    process.execPath,
    [
      bin,
      '--profile',
      'headless',
      ...forms[form].args,
      '--output-format',
      'json',
      'count the TODO lines in the 20 files',
    ],
    { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] },
  )
  let out = ''
  let err = ''
  child.stdout.on('data', (d) => (out += d))
  child.stderr.on('data', (d) => (err += d))
  const code = await new Promise((resolve) => child.on('exit', resolve))
  const ms = performance.now() - t0
  const requests = server.requests.filter((r) => r.path.endsWith('/chat/completions'))
  const promptChars = requests.reduce((sum, r) => sum + (r.rawBody?.length ?? JSON.stringify(r.body).length), 0)
  await server.close()
  if (code !== 0 || JSON.parse(out).result !== 'done') throw new Error(`${form} failed (${code}): ${err || out}`)
  return { ms, requests: requests.length, promptTokens: Math.round(promptChars / 4) }
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]
const results = Object.fromEntries(Object.keys(forms).map((f) => [f, []]))
await runOnce('code') // warm the compile cache
for (let i = 0; i < RUNS; i++) for (const form of Object.keys(forms)) results[form].push(await runOnce(form))

const summary = Object.fromEntries(
  Object.entries(results).map(([form, runs]) => [
    form,
    {
      requests: runs[0].requests,
      promptTokens: runs[0].promptTokens,
      wallMs: Math.round(median(runs.map((r) => r.ms))),
    },
  ]),
)
console.log(
  `Code Mode bench: ${CALLS} reads, ${RUNS} runs per form (median wall time; prompt tokens estimated as request characters / 4)`,
)
console.log('form        requests  prompt tokens  wall ms')
for (const [form, s] of Object.entries(summary))
  console.log(
    `${form.padEnd(11)} ${String(s.requests).padStart(8)}  ${String(s.promptTokens).padStart(13)}  ${String(s.wallMs).padStart(7)}`,
  )
for (const base of ['native-seq', 'native-par']) {
  const c = summary.code
  const b = summary[base]
  console.log(
    `code / ${base}: requests ${(c.requests / b.requests).toFixed(2)}, prompt tokens ${(c.promptTokens / b.promptTokens).toFixed(2)}, wall time ${(c.wallMs / b.wallMs).toFixed(2)}`,
  )
}
