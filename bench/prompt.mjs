#!/usr/bin/env node
// Fixed prompt overhead of the headless profile: the system prompt plus the tool schemas that the
// real `dsh --profile headless` sends on its first request (captured by @dsh/llm-mock-server on
// loopback), i.e. everything the model reads before the first user message.
//
// Token estimator: ceil(UTF-16 length / 4), the same rough heuristic as @dsh/token-meter's
// `estimate` (English and code run at about 4 characters a token; it is not a tokenizer).
//
// Three configurations from the same run: the headless profile as shipped (rarely used tools
// deferred by @dsh/tool-deferral: one catalogue line each inside load_tools), the same with
// deferral off (the baseline: every tool's full schema), and the shipped one with every tool row
// of bundles/base enabled (the shipped profile disables tool-str-replace-editor). "tools sent" counts
// the schemas in the request; "listed" the deferred tools named in load_tools' catalogue.
//
// Usage: node bench/prompt.mjs [--print] [--json]
//   --print  also prints the system prompt text (of the shipped profile)
//   --json   one JSON object per configuration instead of the table
import { spawn } from 'node:child_process'
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
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
const server = await startMockServer({ steps: [{ text: 'done' }, { text: 'done' }, { text: 'done' }] })
const allTools = join(root, 'all-tools.patch.yml')
writeFileSync(allTools, '- id: tool-str-replace-editor\n  disabled: false\n')
const noDeferral = join(root, 'no-deferral.patch.yml')
writeFileSync(noDeferral, '- id: tool-deferral\n  config:\n    enabled: false\n')

const run = (extra) =>
  new Promise((resolve, reject) => {
    const env = {
      PATH: process.env.PATH,
      HOME: root,
      DSH_HOME: join(root, 'home'),
      DEEPSEEK_BASE_URL: server.baseURL,
      DEEPSEEK_API_KEY: 'sk-bench',
      ...(process.env.SHELL ? { SHELL: process.env.SHELL } : {}),
    }
    const child = spawn(process.execPath, [bin, '--profile', 'headless', ...extra, 'hi'], {
      cwd: project,
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    let err = ''
    child.stderr.on('data', (d) => (err += d))
    child.stdout.resume()
    child.on('error', reject)
    child.on('close', (code) => (code === 0 ? resolve() : reject(new Error(`dsh exited ${code}: ${err}`))))
  })

function measure(request, label) {
  const system = request.body.messages
    .filter((m) => m.role === 'system')
    .map((m) => (typeof m.content === 'string' ? m.content : JSON.stringify(m.content)))
    .join('\n')
  const tools = JSON.stringify(request.body.tools ?? [])
  const bytes = (s) => Buffer.byteLength(s, 'utf8')
  const loader = (request.body.tools ?? []).find((t) => (t.function?.name ?? t.name) === 'load_tools')
  const listed = (loader?.function?.description ?? '').split('\n').flatMap((l) => /^- ([\w-]+): /.exec(l)?.[1] ?? [])
  const result = {
    label,
    tools: (request.body.tools ?? []).map((t) => t.function?.name ?? t.name),
    listed,
    systemBytes: bytes(system),
    systemTokens: estimate(system),
    toolSchemaBytes: bytes(tools),
    toolSchemaTokens: estimate(tools),
    totalBytes: bytes(system) + bytes(tools),
    totalTokens: estimate(system) + estimate(tools),
    goalTokens: GOAL_TOKENS,
  }
  result.ratioToGoal = Number((result.totalTokens / GOAL_TOKENS).toFixed(3))
  return { result, system }
}

try {
  await run([])
  await run(['--patch', noDeferral])
  await run(['--patch', allTools])
  const chats = server.requests.filter((r) => r.body && Array.isArray(r.body.messages))
  if (chats.length !== 3) throw new Error(`expected 3 model requests, got ${chats.length}`)
  const shipped = measure(chats[0], 'headless (shipped)')
  const baseline = measure(chats[1], 'headless, deferral off (baseline)')
  const every = measure(chats[2], 'headless + every base tool row')
  const all = [shipped, baseline, every]
  if (args.has('--json')) for (const { result } of all) console.log(JSON.stringify(result))
  else {
    console.log(
      'estimator: ceil(characters / 4) per part (as @dsh/token-meter estimate); tool schemas as sent on the wire',
    )
    for (const { result: r } of all) {
      console.log(`\n${r.label}: ${r.tools.length} tools sent, ${r.listed.length} listed in load_tools`)
      console.log(`  sent  : ${r.tools.join(', ')}`)
      if (r.listed.length > 0) console.log(`  listed: ${r.listed.join(', ')}`)
      console.log(`  system prompt : ${String(r.systemBytes).padStart(6)} bytes  ~${r.systemTokens} tokens`)
      console.log(`  tool schemas  : ${String(r.toolSchemaBytes).padStart(6)} bytes  ~${r.toolSchemaTokens} tokens`)
      console.log(`  total fixed   : ${String(r.totalBytes).padStart(6)} bytes  ~${r.totalTokens} tokens`)
      console.log(
        `  ratio to the ${GOAL_TOKENS}-token goal: ${r.ratioToGoal} (${r.totalTokens <= GOAL_TOKENS ? 'within' : 'over'})`,
      )
    }
  }
  if (args.has('--print')) console.log(`\n--- system prompt (shipped) ---\n${shipped.system}\n--- end ---`)
} finally {
  await server.close()
  rmSync(root, { recursive: true, force: true })
}
