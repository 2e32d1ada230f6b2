#!/usr/bin/env node
// Fixed prompt overhead of the headless profile: the system prompt plus the tool schemas that the
// real `dsh --profile headless` sends on its first request (captured by @dsh/llm-mock-server on
// loopback), i.e. everything the model reads before the first user message.
//
// Token estimator: ceil(UTF-16 length / 4), the same rough heuristic as @dsh/token-meter's
// `estimate` (English and code run at about 4 characters a token; it is not a tokenizer).
//
// Usage: node bench/prompt.mjs [--print] [--json]
//   --print  also prints the system prompt text
//   --json   one JSON object instead of the table
import { spawn } from 'node:child_process'
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { register } from 'tsx/esm/api'

register()
const { startMockServer } = await import('../packages/test-support/llm-mock-server/src/index.ts')

const GOAL_TOKENS = 3000
const estimate = (text) => Math.ceil(text.length / 4)
const args = new Set(process.argv.slice(2))
const bin = fileURLToPath(new URL('../packages/boot/cli/bin/dsh.mjs', import.meta.url))
const root = mkdtempSync(join(tmpdir(), 'dsh-bench-prompt-'))
const project = join(root, 'project')
mkdirSync(project)
const server = await startMockServer({ steps: [{ text: 'done' }] })

const run = () =>
  new Promise((resolve, reject) => {
    const env = {
      PATH: process.env.PATH,
      HOME: root,
      DSH_HOME: join(root, 'home'),
      DEEPSEEK_BASE_URL: server.baseURL,
      DEEPSEEK_API_KEY: 'sk-bench',
    }
    const child = spawn(process.execPath, [bin, '--profile', 'headless', 'hi'], { cwd: project, env, stdio: ['ignore', 'pipe', 'pipe'] })
    let err = ''
    child.stderr.on('data', (d) => (err += d))
    child.stdout.resume()
    child.on('error', reject)
    child.on('close', (code) => (code === 0 ? resolve() : reject(new Error(`dsh exited ${code}: ${err}`))))
  })

try {
  await run()
  const request = server.requests.find((r) => r.body && Array.isArray(r.body.messages))
  if (!request) throw new Error('the model was never called')
  const system = request.body.messages
    .filter((m) => m.role === 'system')
    .map((m) => (typeof m.content === 'string' ? m.content : JSON.stringify(m.content)))
    .join('\n')
  const tools = JSON.stringify(request.body.tools ?? [])
  const names = (request.body.tools ?? []).map((t) => t.function?.name ?? t.name)
  const total = system.length + tools.length
  const bytes = (s) => Buffer.byteLength(s, 'utf8')
  const result = {
    tools: names,
    systemBytes: bytes(system),
    systemTokens: estimate(system),
    toolSchemaBytes: bytes(tools),
    toolSchemaTokens: estimate(tools),
    totalBytes: bytes(system) + bytes(tools),
    totalTokens: estimate(system) + estimate(tools),
    goalTokens: GOAL_TOKENS,
  }
  result.ratioToGoal = Number((result.totalTokens / GOAL_TOKENS).toFixed(3))
  if (args.has('--json')) console.log(JSON.stringify(result))
  else {
    console.log(`headless profile, tools: ${names.join(', ')}`)
    console.log('estimator: ceil(characters / 4) per part (as @dsh/token-meter estimate)')
    console.log(`system prompt : ${String(result.systemBytes).padStart(6)} bytes  ~${result.systemTokens} tokens`)
    console.log(`tool schemas  : ${String(result.toolSchemaBytes).padStart(6)} bytes  ~${result.toolSchemaTokens} tokens`)
    console.log(`total fixed   : ${String(result.totalBytes).padStart(6)} bytes  ~${result.totalTokens} tokens`)
    console.log(`ratio to the ${GOAL_TOKENS}-token goal: ${result.ratioToGoal} (${result.totalTokens <= GOAL_TOKENS ? 'within' : 'over'})`)
    void total
  }
  if (args.has('--print')) console.log(`\n--- system prompt ---\n${system}\n--- end ---`)
} finally {
  await server.close()
  rmSync(root, { recursive: true, force: true })
}
