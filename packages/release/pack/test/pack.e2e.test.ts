// The published `dsh` package, installed as a user installs it: the tarball of scripts/pack.mjs is
// published to a real registry (verdaccio on loopback, proxying registry.npmjs.org for the npm
// dependencies), installed with `npm i -g dsh --registry <local>` into a fresh prefix with an
// empty HOME where the native add-ons cannot be compiled, and its bins are run: --version, a
// one-shot against the scripted model, `dsh web` to its first 200, `dsh-acp` initialize and
// `npx dsh --help`. The tarball's file list is checked too.
import { spawn, spawnSync } from 'node:child_process'
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { Readable, Writable } from 'node:stream'
import { fileURLToPath } from 'node:url'
import * as acp from '@agentclientprotocol/sdk'
import { startMockServer, type MockServer } from '@dsh/llm-mock-server'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'

const checkout = fileURLToPath(new URL('../../../../', import.meta.url))
const cacheDir = process.env.DSH_PACK_CACHE || join(checkout, 'node_modules', '.cache', 'dsh-pack')
const work = mkdtempSync(join(tmpdir(), 'dsh-pack-e2e-'))
const prefix = join(work, 'prefix')
const home = join(work, 'home') // stays the user's empty HOME: nothing is written there before dsh runs
const project = join(work, 'project')
for (const dir of [prefix, home, project]) mkdirSync(dir)

interface Ran {
  code: number | null
  stdout: string
  stderr: string
  ms: number
}

/** Runs a command to its end with exactly `env` (nothing inherited). */
function run(
  command: string,
  args: string[],
  env: Record<string, string>,
  cwd = project,
  timeoutMs = 240_000,
): Promise<Ran> {
  const started = Date.now()
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] })
    let stdout = ''
    let stderr = ''
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs)
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d))
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d))
    child.on('error', reject)
    child.on('close', (code) => {
      clearTimeout(timer)
      resolve({ code, stdout, stderr, ms: Date.now() - started })
    })
  })
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer()
    server.once('error', reject)
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number }
      server.close(() => resolve(port))
    })
  })
}

/** The machine's way out to registry.npmjs.org (a proxy, an extra CA), for the registry's uplink. */
function networkEnv(): Record<string, string> {
  const names = [
    'NODE_EXTRA_CA_CERTS',
    'SSL_CERT_FILE',
    'SSL_CERT_DIR',
    'HTTP_PROXY',
    'HTTPS_PROXY',
    'NO_PROXY',
    'http_proxy',
    'https_proxy',
    'no_proxy',
  ]
  return Object.fromEntries(names.flatMap((n) => (process.env[n] ? [[n, process.env[n] as string]] : [])))
}

let tarball = ''
let entries: string[] = []
let registry = ''
let verdaccio: ReturnType<typeof spawn> | undefined
let mock: MockServer
let install: Ran
/** What every installed bin runs with: the fresh prefix first on PATH, the empty HOME, the model. */
let userEnv: Record<string, string>
/** npm's environment: only the local registry, a cache outside HOME, no way to build add-ons. */
let npmEnv: Record<string, string>
const pkgRoot = join(prefix, 'lib', 'node_modules', 'dsh')

beforeAll(async () => {
  // The tarball: the one CI built for this run, else built here from this (already built) checkout.
  tarball = process.env.DSH_PACK_TARBALL ?? ''
  if (!tarball) {
    const packed = spawnSync(
      process.execPath,
      [join(checkout, 'scripts', 'pack.mjs'), '--skip-build', '--quiet', '--out', join(work, 'out')],
      { encoding: 'utf8' },
    )
    if (packed.status !== 0) throw new Error(`scripts/pack.mjs failed: ${packed.stderr}`)
    tarball = JSON.parse(packed.stdout.trim().split('\n').at(-1) ?? '{}').tarball
  }
  const listed = spawnSync('tar', ['tzf', tarball], { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 })
  if (listed.status !== 0) throw new Error(`tar tzf ${tarball}: ${listed.stderr}`)
  entries = listed.stdout.split('\n').filter(Boolean)

  // The registry: persistent storage for what it proxies (a second run downloads nothing), the
  // dsh package itself removed first so each run publishes the tarball under test.
  const storage = join(cacheDir, 'verdaccio-storage')
  mkdirSync(storage, { recursive: true })
  rmSync(join(storage, 'dsh'), { recursive: true, force: true })
  const port = await freePort()
  registry = `http://127.0.0.1:${port}/`
  const config = join(work, 'verdaccio.yaml')
  writeFileSync(
    config,
    [
      `storage: ${JSON.stringify(storage)}`,
      'auth:',
      '  htpasswd:',
      `    file: ${JSON.stringify(join(work, 'htpasswd'))}`,
      'uplinks:',
      '  npmjs:',
      '    url: https://registry.npmjs.org/',
      '    timeout: 60s',
      '    maxage: 1d', // package metadata kept a day: a second run asks registry.npmjs.org nothing
      'packages:',
      "  'dsh':",
      '    access: $all',
      '    publish: $authenticated',
      "  '@*/*':",
      '    access: $all',
      '    proxy: npmjs',
      "  '**':",
      '    access: $all',
      '    proxy: npmjs',
      'log: { type: stdout, format: pretty, level: error }',
      '',
    ].join('\n'),
  )
  const require = createRequire(import.meta.url)
  const vPkgPath = require.resolve('verdaccio/package.json')
  const vPkg = JSON.parse(readFileSync(vPkgPath, 'utf8'))
  const vBin = join(dirname(vPkgPath), typeof vPkg.bin === 'string' ? vPkg.bin : vPkg.bin.verdaccio)
  verdaccio = spawn(process.execPath, [vBin, '--config', config, '--listen', `127.0.0.1:${port}`], {
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: work, ...networkEnv() },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let vLog = ''
  verdaccio.stdout!.on('data', (d) => (vLog += d))
  verdaccio.stderr!.on('data', (d) => (vLog += d))
  const deadline = Date.now() + 30_000
  for (;;) {
    const ok = await fetch(`${registry}-/ping`).then(
      (r) => r.ok,
      () => false,
    )
    if (ok) break
    if (verdaccio.exitCode !== null || Date.now() > deadline) throw new Error(`verdaccio did not start: ${vLog}`)
    await new Promise((r) => setTimeout(r, 100))
  }

  // A publisher account (the registry's own adduser endpoint) and the publish.
  const user = await fetch(`${registry}-/user/org.couchdb.user:dsh-test`, {
    method: 'PUT',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      name: 'dsh-test',
      password: 'dsh-test-password',
      type: 'user',
      roles: [],
      date: new Date().toISOString(),
    }),
  })
  const { token } = (await user.json()) as { token?: string }
  if (!token) throw new Error(`verdaccio refused the test user (${user.status})`)
  const publisherRc = join(work, 'publisher.npmrc')
  writeFileSync(publisherRc, `registry=${registry}\n//127.0.0.1:${port}/:_authToken=${token}\n`)
  const nodeDir = dirname(process.execPath)
  const emptyNodeHeaders = join(work, 'no-node-headers')
  mkdirSync(emptyNodeHeaders)
  npmEnv = {
    PATH: `${join(prefix, 'bin')}:${nodeDir}:/usr/bin:/bin`,
    HOME: home,
    npm_config_registry: registry,
    npm_config_userconfig: join(work, 'user.npmrc'), // absent: nothing of the builder's npm config
    npm_config_cache: join(cacheDir, 'npm-cache'),
    npm_config_prefix: prefix,
    // The native add-ons cannot be built here (no Node headers) nor downloaded prebuilt.
    npm_config_nodedir: emptyNodeHeaders,
    npm_config_build_from_source: 'true',
    npm_config_update_notifier: 'false',
    npm_config_fund: 'false',
    npm_config_audit: 'false',
  }
  const published = await run(
    'npm',
    ['publish', tarball, '--loglevel=error'],
    { ...npmEnv, npm_config_userconfig: publisherRc },
    work,
  )
  if (published.code !== 0) throw new Error(`npm publish: ${published.stderr}`)

  install = await run('npm', ['i', '-g', 'dsh', '--prefer-offline', '--loglevel=error'], npmEnv, work)
  if (install.code !== 0) throw new Error(`npm i -g dsh: ${install.stderr}`)
  const size = statSync(tarball).size
  console.log(
    `dsh npm package: tarball ${(size / 1024 / 1024).toFixed(2)} MB (${entries.length} files); npm i -g dsh from the local registry: ${(install.ms / 1000).toFixed(1)} s`,
  )

  mock = await startMockServer({ steps: [{ text: 'Installed and answering.' }] } as never)
  userEnv = {
    PATH: `${join(prefix, 'bin')}:${process.env.PATH ?? '/usr/bin:/bin'}`,
    HOME: home,
    DEEPSEEK_BASE_URL: mock.baseURL,
    DEEPSEEK_API_KEY: 'sk-test-not-a-real-key',
  }
}, 600_000)

// Deleting the registry's storage, the global prefix and the unpacked trees took over 20 s (the
// default hook limit) on a machine at load 16-20.
afterAll(async () => {
  verdaccio?.kill('SIGTERM')
  await mock?.close()
  rmSync(work, { recursive: true, force: true })
}, 180_000)

describe('the dsh npm package', () => {
  it('the tarball holds the bins, the prelinked stacks, the built client and the profiles; no tests, maps or sources', () => {
    const size = statSync(tarball).size
    expect(size).toBeLessThan(15 * 1024 * 1024)
    for (const needed of [
      'package/package.json',
      'package/bin/dsh.mjs',
      'package/bin/dsh-acp.mjs',
      'package/bin/dsh-jsonrpc-agent.mjs',
      'package/prelinked/rows.json',
      'package/prelinked/dsh/manifest.json',
      'package/node_modules/@dsh/client-web/dist-web/index.html',
      'package/profiles/headless/package.json',
    ]) {
      expect(entries).toContain(needed)
    }
    expect(entries.some((e) => /^package\/prelinked\/dsh\/stack-.*\.script\.js$/.test(e))).toBe(true)
    const bad = entries.filter(
      (e) =>
        /(^|\/)(test|tests|__tests__|fixtures)\//.test(e) ||
        /\.(test|spec)\.[cm]?[jt]sx?$/.test(e) ||
        /\.map$/.test(e) ||
        /\.(ts|tsx|mts|cts)$/.test(e) ||
        /(^|\/)\.(npmrc|env|ssh|dsh|credentials)/.test(e),
    )
    expect(bad).toEqual([])
  })

  it('no shipped file (docs aside) names $HOME or the checkout it was built from', () => {
    const extracted = join(work, 'extracted')
    mkdirSync(extracted)
    expect(spawnSync('tar', ['xzf', tarball, '-C', extracted]).status).toBe(0)
    const needles = [checkout, ...(process.env.HOME && process.env.HOME !== '/' ? [`${process.env.HOME}/`] : [])]
    const hits: string[] = []
    const walk = (dir: string) => {
      for (const entry of readdirSync(dir, { withFileTypes: true })) {
        const path = join(dir, entry.name)
        if (entry.isDirectory()) walk(path)
        // Hand-written docs may show example paths (`/root/...`); generated files must not.
        else if (entry.isFile() && !entry.name.endsWith('.md')) {
          const text = readFileSync(path, 'latin1')
          for (const needle of needles)
            if (text.includes(needle)) hits.push(`${path.slice(extracted.length + 1)} names ${needle}`)
        }
      }
    }
    walk(extracted)
    expect(hits).toEqual([])
  })

  it('installs without building the native add-ons', () => {
    expect(install.code).toBe(0)
    expect(existsSync(join(pkgRoot, 'node_modules', '@dsh', 'cli', 'bin', 'dsh.mjs'))).toBe(true)
    expect(existsSync(join(pkgRoot, 'node_modules', 'better-sqlite3', 'build', 'Release', 'better_sqlite3.node'))).toBe(
      false,
    )
    expect(existsSync(join(pkgRoot, 'node_modules', 'node-pty', 'build', 'Release', 'pty.node'))).toBe(false)
  })

  it('dsh --version', async () => {
    const version = JSON.parse(readFileSync(join(pkgRoot, 'package.json'), 'utf8')).version
    const r = await run('dsh', ['--version'], userEnv)
    expect(r.code).toBe(0)
    expect(r.stdout.trim()).toBe(`dsh ${version}`)
  })

  it('a one-shot against the scripted model: the answer, one line on what is off, the prelinked stack used', async () => {
    const r = await run('dsh', ['-p', 'say something'], { ...userEnv, DSH_DEBUG: '1' })
    expect(r.stderr).not.toMatch(/internal error|boot failed/)
    expect(r.code).toBe(0)
    expect(r.stdout).toContain('Installed and answering.')
    const notices = r.stderr.split('\n').filter((l) => l.includes('without native add-on'))
    expect(notices).toEqual([
      "dsh: running without native add-ons better-sqlite3 (session search off, sessions in JSONL), node-pty (terminals off); reinstall dsh where a C++ compiler and Node's headers are available to turn them on",
    ])
    // The first start moved the prelinked files to this install; the boot took its rows from them.
    expect(r.stderr).toMatch(/rows from prelinked stack stack-/)
    expect(JSON.parse(readFileSync(join(pkgRoot, 'prelinked', 'pack.json'), 'utf8')).root).toBe(`${pkgRoot}/`)
    // Sessions went to the JSONL store under the (formerly empty) HOME.
    expect(existsSync(join(home, '.dsh'))).toBe(true)
  })

  it('dsh sessions lists the one-shot (a layer of another package, found in the package layout); search says it is off', async () => {
    const list = await run('dsh', ['sessions', '--output-format', 'json'], userEnv)
    expect(list.stderr).not.toMatch(/internal error|boot failed/)
    expect(list.code).toBe(0)
    expect(list.stdout).toContain('say something')
    const search = await run('dsh', ['sessions', 'search', 'something'], userEnv)
    expect(search.code).not.toBe(0)
    expect(search.stderr).toMatch(/session search is off: the better-sqlite3 native add-on is not installed/)
  })

  it('terminals enabled without node-pty: the tool answers that terminals are off, the run goes on', async () => {
    const model = await startMockServer({
      steps: [{ toolCalls: [{ id: 'call_1', name: 'terminal_open', arguments: {} }] }, { text: 'Noted.' }],
    } as never)
    try {
      const patch = join(work, 'terminals.patch.yml')
      writeFileSync(patch, '- id: terminals\n  disabled: false\n- id: tool-terminal\n  disabled: false\n')
      const r = await run('dsh', ['--patch', patch, '-p', 'open a terminal'], {
        ...userEnv,
        DEEPSEEK_BASE_URL: model.baseURL,
      })
      expect(r.stderr).not.toMatch(/internal error|boot failed/)
      expect(r.code).toBe(0)
      expect(r.stdout).toContain('Noted.')
      const messages = (model.requests[1].body as { messages: { role: string; content: string }[] }).messages
      expect(messages.filter((m) => m.role === 'tool').at(-1)?.content).toMatch(
        /terminals are off: the node-pty native add-on is not installed/,
      )
    } finally {
      await model.close()
    }
  })

  it('dsh web answers its first request with the built client', async () => {
    const child = spawn('dsh', ['web', '--no-open', '--port', '0'], {
      cwd: project,
      env: userEnv,
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    try {
      let stderr = ''
      child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d))
      const url = await new Promise<string>((resolve, reject) => {
        let out = ''
        child.stdout.setEncoding('utf8').on('data', (d: string) => {
          out += d
          if (out.includes('\n')) resolve(out.split('\n')[0].trim())
        })
        child.on('close', (code) => reject(new Error(`dsh web exited ${code} before printing its URL: ${stderr}`)))
      })
      const res = await fetch(url)
      expect(res.status).toBe(200)
      expect(await res.text()).toContain('<script type="importmap">')
    } finally {
      child.kill('SIGKILL')
    }
  })

  it('dsh-acp answers initialize (official ACP SDK as the client)', async () => {
    const child = spawn('dsh-acp', [], { cwd: project, env: userEnv, stdio: ['pipe', 'pipe', 'pipe'] })
    try {
      const readable = Readable.toWeb(child.stdout) as ReadableStream<Uint8Array>
      const writable = Writable.toWeb(child.stdin) as WritableStream<Uint8Array>
      const conn = acp.client({ name: 'dsh-pack-test' }).connect(acp.ndJsonStream(writable, readable))
      const init = await conn.agent.request('initialize', {
        protocolVersion: acp.PROTOCOL_VERSION,
        clientCapabilities: {},
        clientInfo: { name: 'dsh-pack-test', version: '0' },
      })
      expect(init.protocolVersion).toBe(acp.PROTOCOL_VERSION)
      conn.close()
    } finally {
      child.kill('SIGKILL')
    }
  })

  it('npx dsh --help from the same registry', async () => {
    const r = await run('npx', ['--yes', 'dsh', '--help'], npmEnv, project)
    expect(r.code).toBe(0)
    expect(r.stdout).toMatch(/^Usage:/m)
  })
})
