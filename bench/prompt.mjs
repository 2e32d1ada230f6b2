#!/usr/bin/env node
// Fixed prompt overhead of the shipped profiles: the system prompt plus the tool schemas that the
// real bin sends on its first model request (captured by @dsh/llm-mock-server on loopback), i.e.
// everything the model reads before the first user message. Three profiles, each as shipped and
// with deferral off (the baseline: every tool's full schema):
//   headless  `dsh --profile headless "hi"` (the default profile and `dsh -p`)
//   tui       `dsh --profile tui` inside a private tmux server, "hi" typed and sent
//   web       `dsh web --no-open --port 0`, sessions.create + sessions.prompt over HTTP
// plus the headless profile with every tool row of bundles/base enabled (the shipped profiles
// disable tool-str-replace-editor).
//
// Token estimator: ceil(UTF-16 length / 4), the same rough heuristic as @dsh/token-meter's
// `estimate` (English and code run at about 4 characters a token; it is not a tokenizer).
// "sent" counts the full schemas in the request; "listed" the deferred tools named in load_tools'
// catalogue (reachable: loaded on demand). Beside each figure: the 1-minute load average when the
// configuration started and the CPU ms the dsh process used (to its exit for headless and web, to
// the first reply on screen for tui), so a figure taken on a busy machine says so.
//
// Usage: node bench/prompt.mjs [--print] [--json] [--only headless,tui,web]
//   --print  also prints the system prompt text of each shipped profile
//   --json   one JSON object per configuration instead of the table
//   --only   a comma-separated subset of the profiles
//   --save DIR  writes each captured request body to DIR/<profile>[-baseline|-every].json
import { spawn } from 'node:child_process'
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { loadavg, tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { register } from 'tsx/esm/api'

register()
const { startMockServer } = await import('../packages/test-support/llm-mock-server/src/index.ts')

const GOAL_TOKENS = 3000
const estimate = (text) => Math.ceil(text.length / 4)
const argv = process.argv.slice(2)
const args = new Set(argv)
const onlyAt = argv.indexOf('--only')
const PROFILES = ['headless', 'tui', 'web']
const only = onlyAt >= 0 ? (argv[onlyAt + 1] ?? '').split(',').filter(Boolean) : PROFILES
for (const name of only)
  if (!PROFILES.includes(name)) throw new Error(`--only: unknown profile "${name}" (one of ${PROFILES.join(', ')})`)
const saveAt = argv.indexOf('--save')
const saveDir = saveAt >= 0 ? argv[saveAt + 1] : undefined
if (saveAt >= 0 && !saveDir) throw new Error('--save needs a directory')
const bin = fileURLToPath(new URL('../packages/boot/cli/bin/dsh.mjs', import.meta.url))
const root = mkdtempSync(join(tmpdir(), 'dsh-bench-prompt-'))
const allTools = join(root, 'all-tools.patch.yml')
writeFileSync(allTools, '- id: tool-str-replace-editor\n  disabled: false\n')
const noDeferral = join(root, 'no-deferral.patch.yml')
writeFileSync(noDeferral, '- id: tool-deferral\n  config:\n    enabled: false\n')
const STEPS = [{ text: 'done' }, { text: 'done' }, { text: 'done' }]
const chats = (server) => server.requests.filter((r) => r.body && Array.isArray(r.body.messages))

/** CPU ms this process's reaped children used so far (cutime + cstime of /proc/self/stat). */
const childCpuMs = () => {
  const fields = readFileSync('/proc/self/stat', 'utf8').split(') ')[1].split(' ')
  return (Number(fields[13]) + Number(fields[14])) * 10
}
/** CPU ms a running process used so far (utime + stime of /proc/PID/stat). */
const pidCpuMs = (pid) => {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ')
  return (Number(fields[11]) + Number(fields[12])) * 10
}
const waitUntil = async (test, what, ms = 60_000) => {
  const deadline = Date.now() + ms
  while (!test()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise((r) => setTimeout(r, 50))
  }
}

let counter = 0
const dirs = () => {
  const dir = join(root, `run-${++counter}`)
  const project = join(dir, 'project')
  mkdirSync(project, { recursive: true })
  return { dir, project, home: join(dir, 'home') }
}

/** `dsh --profile headless ... hi`: resolves with the first chat request and the CPU ms. */
async function headless(extra) {
  const server = await startMockServer({ steps: STEPS })
  const { dir, project, home } = dirs()
  const before = childCpuMs()
  try {
    await new Promise((resolve, reject) => {
      const env = {
        PATH: process.env.PATH,
        HOME: dir,
        DSH_HOME: home,
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
    return { request: chats(server)[0], cpuMs: childCpuMs() - before }
  } finally {
    await server.close()
  }
}

/** `dsh --profile tui` in tmux: "hi" typed and sent; resolves once the reply is on screen. */
async function tui(extra) {
  const { TuiSession, killServer } = await import('../packages/test-support/cli-testkit/src/tui.ts')
  const server = await startMockServer({ steps: STEPS })
  const { dir, project, home } = dirs()
  const session = await TuiSession.start({
    server,
    ws: { root: dir, home, cwd: project },
    args: ['--profile', 'tui', ...extra],
  })
  try {
    await session.waitFor(/deepseek-v4-flash/, 60_000)
    session.type('hi')
    session.keys('Enter')
    await session.waitFor(/done/, 60_000)
    const cpuMs = pidCpuMs(session.dshPid())
    return { request: chats(server)[0], cpuMs }
  } finally {
    await session.close()
    await server.close()
    killServer()
  }
}

/** `dsh web`: one session created and prompted over HTTP; resolves with the first chat request. */
async function web(extra) {
  const { startWebApp } = await import('../packages/test-support/web-testkit/src/index.ts')
  const before = childCpuMs()
  const app = await startWebApp({ steps: STEPS, args: extra, env: { DSH_PERMISSION_MODE: 'workspace-write' } })
  try {
    const { session } = await app.call('sessions.create', { cwd: app.cwd })
    await app.call('sessions.prompt', { sessionId: session.sessionId, text: 'hi' })
    await waitUntil(() => chats(app.mock).length > 0, "the web profile's first model request")
    const request = chats(app.mock)[0]
    await app.stop()
    return { request, cpuMs: childCpuMs() - before }
  } finally {
    await app.close()
  }
}

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
    requestBytes: bytes(JSON.stringify(request.body)),
    goalTokens: GOAL_TOKENS,
  }
  result.ratioToGoal = Number((result.totalTokens / GOAL_TOKENS).toFixed(3))
  return { result, system }
}

const CONFIGS = [
  { profile: 'headless', file: 'headless', label: 'headless (shipped)', run: () => headless([]), shipped: true },
  {
    profile: 'headless',
    file: 'headless-baseline',
    label: 'headless, deferral off (baseline)',
    run: () => headless(['--patch', noDeferral]),
  },
  {
    profile: 'headless',
    file: 'headless-every',
    label: 'headless + every base tool row',
    run: () => headless(['--patch', allTools]),
  },
  { profile: 'tui', file: 'tui', label: 'tui (shipped)', run: () => tui([]), shipped: true },
  {
    profile: 'tui',
    file: 'tui-baseline',
    label: 'tui, deferral off (baseline)',
    run: () => tui(['--patch', noDeferral]),
  },
  { profile: 'web', file: 'web', label: 'web (shipped)', run: () => web([]), shipped: true },
  {
    profile: 'web',
    file: 'web-baseline',
    label: 'web, deferral off (baseline)',
    run: () => web(['--patch', noDeferral]),
  },
]

try {
  const all = []
  for (const config of CONFIGS.filter((c) => only.includes(c.profile))) {
    const load = loadavg()[0]
    const { request, cpuMs } = await config.run()
    if (!request) throw new Error(`${config.label}: no model request was captured`)
    if (saveDir) {
      mkdirSync(saveDir, { recursive: true })
      writeFileSync(join(saveDir, `${config.file}.json`), `${JSON.stringify(request.body, null, 2)}\n`)
    }
    const measured = measure(request, config.label)
    measured.result.cpuMs = cpuMs
    measured.result.load1 = Number(load.toFixed(2))
    measured.shipped = config.shipped
    all.push(measured)
  }
  if (args.has('--json')) for (const { result } of all) console.log(JSON.stringify(result))
  else {
    console.log(
      'estimator: ceil(characters / 4) per part (as @dsh/token-meter estimate); tool schemas as sent on the wire',
    )
    for (const { result: r } of all) {
      console.log(
        `\n${r.label}: ${r.tools.length} tools sent, ${r.listed.length} listed in load_tools  [load ${r.load1}, dsh CPU ${r.cpuMs} ms]`,
      )
      console.log(`  sent  : ${r.tools.join(', ')}`)
      if (r.listed.length > 0) console.log(`  listed: ${r.listed.join(', ')}`)
      console.log(`  system prompt : ${String(r.systemBytes).padStart(6)} bytes  ~${r.systemTokens} tokens`)
      console.log(`  tool schemas  : ${String(r.toolSchemaBytes).padStart(6)} bytes  ~${r.toolSchemaTokens} tokens`)
      console.log(`  total fixed   : ${String(r.totalBytes).padStart(6)} bytes  ~${r.totalTokens} tokens`)
      console.log(`  whole request : ${String(r.requestBytes).padStart(6)} bytes`)
      console.log(
        `  ratio to the ${GOAL_TOKENS}-token goal: ${r.ratioToGoal} (${r.totalTokens <= GOAL_TOKENS ? 'within' : 'over'})`,
      )
    }
  }
  if (args.has('--print'))
    for (const { result, system, shipped } of all)
      if (shipped) console.log(`\n--- system prompt (${result.label}) ---\n${system}\n--- end ---`)
} finally {
  rmSync(root, { recursive: true, force: true })
}
