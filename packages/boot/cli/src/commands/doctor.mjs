// @ts-check
// `dsh doctor [--json]`: one line per thing dsh needs or can use, with a fix where one exists.
// Every check is a probe without a shell: Node's own facts, the sandbox runner's real probe (the
// @dsh/sandbox-local plugin in a throwaway context), `rg --version` and `git --version` through
// execFile, loading the two native add-ons, the credentials seam's describe() (names and where
// they come from, never values), `dsh config check`'s probe of the profiles, one GET of the model
// endpoint's /models with a short timeout, and statfs of $DSH_HOME. Checks run concurrently.
// Exit 1 when something needed is missing (Node too old, no sandbox runner, no model credential,
// a configuration problem, the endpoint unreachable), else 0; 2 on a usage error.
import { execFile } from 'node:child_process'
import { existsSync, statfsSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'

const HELP = `Usage: dsh doctor [--json]

Checks what this dsh installation needs and can use, one line each with a fix:
Node's version, the sandbox runner (bwrap or Landlock) and what it leaves unconfined, ripgrep,
git, the native add-ons (better-sqlite3, node-pty), which model credentials are set (never their
values), whether settings.yaml, the profiles and the credentials files are valid, whether the
model endpoint answers, and the free disk space under $DSH_HOME.

  --json       print {"ok", "checks": [{"name", "status", "detail", "fix"?, "needed"}]}
  --help, -h   this help

Exit status: 0 nothing needed is missing, 1 something needed is missing, 2 usage error.
`

/** Oldest Node dsh runs on (the root package's engines field). */
const MIN_NODE = [20, 19]

/**
 * @typedef {'ok' | 'warn' | 'fail'} Status
 * @typedef {{ name: string, status: Status, detail: string, fix?: string, needed: boolean }} Check
 */

/** @param {string} file @param {string[]} args @param {number} timeoutMs */
function probe(file, args, timeoutMs = 3000) {
  return new Promise((resolve) => {
    execFile(file, args, { timeout: timeoutMs, shell: false, windowsHide: true }, (error, stdout) => {
      resolve(error ? { error: /** @type {NodeJS.ErrnoException} */ (error) } : { stdout: String(stdout) })
    })
  })
}

/** @returns {Check} */
function checkNode() {
  const [major, minor] = process.versions.node.split('.').map(Number)
  const ok = major > MIN_NODE[0] || (major === MIN_NODE[0] && minor >= MIN_NODE[1])
  return ok
    ? { name: 'node', status: 'ok', detail: `Node ${process.versions.node}`, needed: true }
    : {
        name: 'node',
        status: 'fail',
        detail: `Node ${process.versions.node} is older than ${MIN_NODE.join('.')}`,
        fix: `install Node ${MIN_NODE.join('.')} or newer (https://nodejs.org, or nvm install 22)`,
        needed: true,
      }
}

/** @param {string} home @returns {Promise<Check>} */
async function checkSandbox(home) {
  const { Context } = await import('cordis')
  const { LocalSandbox } = await import('@dsh/sandbox-local')
  const ctx = new Context()
  try {
    await ctx.plugin(
      /** @type {never} */ (LocalSandbox),
      /** @type {never} */ ({ probeCache: false, spawnServer: false }),
    )
    const sandbox =
      /** @type {{ describe(): Promise<{ runner?: string, rejected: { runner: string, reason: string }[], notes?: string[] }> }} */ (
        /** @type {unknown} */ (ctx.get('sandbox'))
      )
    const info = await sandbox.describe()
    if (!info.runner) {
      const why = info.rejected.map((r) => `${r.runner}: ${r.reason}`).join('; ')
      return {
        name: 'sandbox',
        status: 'fail',
        needed: true,
        detail: `no sandbox runner works (${why || 'none probed'}); confined commands fail closed`,
        fix: 'install bubblewrap (apt install bubblewrap / dnf install bubblewrap) and allow unprivileged user namespaces, or run on a kernel with Landlock',
      }
    }
    const confines =
      info.runner === 'bwrap'
        ? 'writes outside the workspace, network per permission mode, the protected paths under $DSH_HOME'
        : 'writes outside the workspace (Landlock), the protected paths under $DSH_HOME'
    const notes = info.notes?.length ? `; not confined: ${info.notes.join('; ')}` : ''
    return { name: 'sandbox', status: 'ok', needed: true, detail: `${info.runner} confines ${confines}${notes}` }
  } catch (error) {
    return {
      name: 'sandbox',
      status: 'fail',
      needed: true,
      detail: `the sandbox probe failed: ${String(/** @type {Error} */ (error)?.message ?? error).split('\n')[0]}`,
    }
  } finally {
    await ctx.registry.delete(/** @type {never} */ (LocalSandbox))
  }
}

/** @param {string} name @param {string} bin @param {string} fix @returns {Promise<Check>} */
async function checkTool(name, bin, fix) {
  const r = /** @type {{ stdout?: string, error?: NodeJS.ErrnoException }} */ (await probe(bin, ['--version']))
  if (r.stdout !== undefined) return { name, status: 'ok', detail: r.stdout.split('\n')[0].trim(), needed: false }
  const why = r.error?.code === 'ENOENT' ? 'not found on PATH' : String(r.error?.message ?? r.error).split('\n')[0]
  return { name, status: 'warn', detail: `${bin}: ${why}`, fix, needed: false }
}

/**
 * Loads a native add-on the way its package does (resolved from the package that depends on it).
 * @param {string} name  the check's name
 * @param {string[]} ownerChain  packages from the installation down to one that depends on the add-on
 * @param {string} addon
 * @param {(mod: any) => void} exercise  touches the compiled part (some add-ons load it lazily)
 * @param {string} off  what does not work without it
 * @param {string} installBase
 * @returns {Check}
 */
export function checkAddon(name, ownerChain, addon, exercise, off, installBase) {
  const fix = `rebuild it: a C++ compiler, make and python3 are needed (apt install build-essential python3), then "npm rebuild ${addon}" in the dsh installation; without network access to Node's headers set npm_config_nodedir to a Node source tree`
  try {
    let owner = installBase
    for (const pkg of ownerChain) {
      try {
        owner = createRequire(owner).resolve(`${pkg}/package.json`)
      } catch {
        break
      }
    }
    const mod = createRequire(owner)(addon)
    exercise(mod)
    return { name, status: 'ok', detail: `${addon} loads`, needed: false }
  } catch (error) {
    const message = String(/** @type {Error} */ (error)?.message ?? error).split('\n')[0]
    const missing = /Cannot find module/.test(message) && message.includes(`'${addon}'`)
    return {
      name,
      status: 'warn',
      detail: `${addon} ${missing ? 'is not installed' : `does not load (${message})`}: ${off}`,
      fix,
      needed: false,
    }
  }
}

/** @param {string} home @returns {Promise<Check>} */
async function checkCredentials(home) {
  const { Context } = await import('cordis')
  const { LocalCredentials } = await import('@dsh/credentials-local')
  const { PROJECT_ENV_CREDENTIALS } = await import('@dsh/home-paths')
  const ctx = new Context()
  try {
    // checkAtStart off: a broken file is the config check's line; here only names and sources.
    await ctx.plugin(/** @type {never} */ (LocalCredentials), /** @type {never} */ ({ home, checkAtStart: false }))
    const credentials =
      /** @type {{ describe(name: string): Promise<{ configured: boolean, source?: { label: string } }> }} */ (
        /** @type {unknown} */ (ctx.get('credentials'))
      )
    const set = []
    for (const name of PROJECT_ENV_CREDENTIALS) {
      const d = await credentials.describe(name)
      if (d.configured) set.push(`${name} (${d.source?.label ?? 'set'})`)
    }
    if (set.length) return { name: 'credentials', status: 'ok', detail: `set: ${set.join(', ')}`, needed: true }
    return {
      name: 'credentials',
      status: 'fail',
      needed: true,
      detail: 'no model credential is set (DEEPSEEK_API_KEY, OPENAI_API_KEY, ANTHROPIC_API_KEY, ...)',
      fix: `run "dsh" in a terminal (it asks for the key and stores it in ${join(home, '.credentials.yaml')}, mode 0600), or export DEEPSEEK_API_KEY=...`,
    }
  } finally {
    await ctx.registry.delete(/** @type {never} */ (LocalCredentials))
  }
}

/** @param {{ home: string, installBase: string, templatesDir: string }} opts @returns {Promise<Check>} */
async function checkSettings(opts) {
  const { checkConfig } = await import('./config.mjs')
  const report = await checkConfig({ ...opts, cwd: process.cwd() })
  if (report.ok)
    return {
      name: 'config',
      status: 'ok',
      detail: `settings.yaml, credentials files and profiles (${report.profiles.join(', ')}) are valid`,
      needed: true,
    }
  return {
    name: 'config',
    status: 'fail',
    needed: true,
    detail: report.problems.map((p) => p.message).join(' | '),
    fix: 'fix the lines named ("dsh config check" repeats them)',
  }
}

/** @param {string} baseURL @param {number} timeoutMs @returns {Promise<Check>} */
export async function checkEndpoint(baseURL, timeoutMs = 3000) {
  const url = `${baseURL.replace(/\/+$/, '')}/models`
  const started = Date.now()
  try {
    const res = await fetch(url, { method: 'GET', signal: AbortSignal.timeout(timeoutMs), redirect: 'manual' })
    await res.body?.cancel()
    const ms = Date.now() - started
    // Any HTTP answer means the endpoint is reachable; 401 without a key is normal.
    return {
      name: 'endpoint',
      status: 'ok',
      detail: `${baseURL} answers (GET /models: HTTP ${res.status}, ${ms} ms)`,
      needed: true,
    }
  } catch (error) {
    const e = /** @type {Error & { cause?: { code?: string, message?: string } }} */ (error)
    const why =
      e.name === 'TimeoutError' ? `no answer within ${timeoutMs} ms` : (e.cause?.code ?? e.cause?.message ?? e.message)
    return {
      name: 'endpoint',
      status: 'fail',
      needed: true,
      detail: `${baseURL} does not answer (${why})`,
      fix: 'check the network or proxy; DEEPSEEK_BASE_URL (environment or $DSH_HOME/.env) sets another endpoint',
    }
  }
}

/** @param {string} home @returns {Check} */
function checkDisk(home) {
  let at = home
  while (!existsSync(at) && dirname(at) !== at) at = dirname(at)
  try {
    const s = statfsSync(at)
    const free = s.bavail * s.bsize
    const gb = free / 1024 ** 3
    const detail = `${gb >= 10 ? gb.toFixed(0) : gb.toFixed(1)} GB free under ${home}`
    if (free < 100 * 1024 ** 2)
      return {
        name: 'disk',
        status: 'fail',
        detail,
        fix: 'free some space: sessions and caches are written there',
        needed: true,
      }
    if (free < 1024 ** 3)
      return {
        name: 'disk',
        status: 'warn',
        detail,
        fix: 'free some space: sessions and caches are written there',
        needed: false,
      }
    return { name: 'disk', status: 'ok', detail, needed: false }
  } catch (error) {
    return {
      name: 'disk',
      status: 'warn',
      detail: `cannot read the free space of ${at}: ${/** @type {Error} */ (error).message}`,
      needed: false,
    }
  }
}

/**
 * @param {{ home: string, installBase: string, templatesDir: string, env?: NodeJS.ProcessEnv }} opts
 * @returns {Promise<Check[]>}
 */
export async function diagnose(opts) {
  const env = opts.env ?? process.env
  const baseURL = env.DEEPSEEK_BASE_URL || 'https://api.deepseek.com'
  const pending = [
    Promise.resolve(checkNode()),
    checkSandbox(opts.home),
    checkTool(
      'ripgrep',
      'rg',
      'install ripgrep (apt install ripgrep / brew install ripgrep): the search tools are faster with it',
    ),
    checkTool('git', 'git', 'install git: checkpoints, diffs and the project root detection use it'),
    Promise.resolve(
      checkAddon(
        'sqlite',
        ['@dsh/bundle-base', '@dsh/session-query-sqlite'],
        'better-sqlite3',
        (Db) => new Db(':memory:').close(),
        'sessions are stored as JSONL and session search is off',
        opts.installBase,
      ),
    ),
    Promise.resolve(
      checkAddon(
        'pty',
        ['@dsh/subprocess-local'],
        'node-pty',
        (pty) => void pty.spawn,
        'interactive terminals are off',
        opts.installBase,
      ),
    ),
    checkCredentials(opts.home),
    checkSettings(opts),
    checkEndpoint(baseURL),
    Promise.resolve(checkDisk(opts.home)),
  ]
  return Promise.all(pending)
}

/**
 * @param {readonly string[]} argv
 * @param {{ installBase: string, templatesDir: string }} install
 * @returns {Promise<number>}
 */
export async function run(argv, install) {
  let json = false
  for (const a of argv) {
    if (a === '--help' || a === '-h') {
      process.stdout.write(HELP)
      return 0
    }
    if (a === '--json') json = true
    else {
      process.stderr.write(`dsh: doctor: unexpected argument ${JSON.stringify(a)}\ndsh: see "dsh doctor --help"\n`)
      return 2
    }
  }
  const { resolveDshHome } = await import('@dsh/home-paths')
  const { applyDotEnv } = await import('@dsh/app-boot')
  const home = resolveDshHome(process.env)
  applyDotEnv({ env: process.env, cwd: process.cwd(), home })
  // Rows probed by the config check may print while mounting: keep stdout for the report.
  const write = process.stdout.write
  process.stdout.write = /** @type {typeof process.stdout.write} */ (process.stderr.write.bind(process.stderr))
  let checks
  try {
    checks = await diagnose({ home, ...install })
  } finally {
    process.stdout.write = write
  }
  const ok = !checks.some((c) => c.status === 'fail' && c.needed)
  if (json) process.stdout.write(JSON.stringify({ ok, home, checks }) + '\n')
  else {
    const mark = { ok: 'ok  ', warn: 'warn', fail: 'FAIL' }
    for (const c of checks)
      process.stdout.write(`${mark[c.status]} ${c.name}: ${c.detail}${c.fix ? ` -> fix: ${c.fix}` : ''}\n`)
    process.stdout.write(
      ok ? 'dsh doctor: nothing needed is missing\n' : 'dsh doctor: something needed is missing (FAIL lines above)\n',
    )
  }
  return ok ? 0 : 1
}
