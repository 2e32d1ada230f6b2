// The Landlock spawn server (one confined helper per policy): the server is confined exactly as a
// command of the helper per command is, a second command starts no runner, and a server that dies
// never lets a command run outside the confinement (the argv that remains is the confined helper;
// a request in flight fails with a clear error and the command never starts).
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest'
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs'
import { homedir, tmpdir } from 'node:os'
import { join } from 'node:path'
import { Context } from 'cordis'
import type { SandboxInvocation, SandboxPolicy } from '@dsh/sandbox'
import type {} from '@dsh/subprocess'
import LocalSubprocessService from '@dsh/subprocess-local'
import { spawnServerUnavailable } from '@dsh/posix-spawn'
import LocalSandbox from '../src/index.ts'

let base: string
let ws: string
let outside: string

beforeAll(() => {
  base = mkdtempSync(join(tmpdir(), 'dsh-landlock-server-'))
  ws = join(base, 'ws')
  outside = join(base, 'outside')
  for (const dir of [ws, outside]) mkdirSync(dir)
})

afterAll(() => {
  rmSync(base, { recursive: true, force: true })
})

const policy = (network = false): SandboxPolicy => ({
  mode: 'workspace-write',
  workspaceRoot: ws,
  writableRoots: [ws],
  network,
})
const env = { PATH: '/usr/local/bin:/usr/bin:/bin', HOME: homedir() }

/** Spawn servers (the `spawn-server` executable) descended from this process. */
function serverPids(): number[] {
  const parents = new Map<number, number>()
  const servers: number[] = []
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue
    try {
      parents.set(Number(entry), Number(/^PPid:\s+(\d+)/m.exec(readFileSync(`/proc/${entry}/status`, 'utf8'))![1]))
      if (readFileSync(`/proc/${entry}/cmdline`, 'latin1').split('\0')[0]!.endsWith('/spawn-server'))
        servers.push(Number(entry))
    } catch {}
  }
  const ours = (pid: number): boolean => {
    for (let p = parents.get(pid); p !== undefined && p > 1; p = parents.get(p)) if (p === process.pid) return true
    return false
  }
  return servers.filter(ours)
}
/** The servers started since `others` was taken (each test takes its own). */
let others = new Set<number>()
const fresh = () => serverPids().filter((pid) => !others.has(pid))
let contexts: Context[] = []

/** A Context with the real subprocess provider and a forced Landlock sandbox running `node`. */
async function landlock(node: string): Promise<Context> {
  others = new Set(serverPids())
  const ctx = new Context()
  contexts.push(ctx)
  await ctx.plugin(LocalSubprocessService, {} as never)
  await ctx.plugin(LocalSandbox, { runner: 'landlock', node })
  return ctx
}

afterEach(async () => {
  for (const ctx of contexts) await ctx.fiber.dispose()
  contexts = []
  await vi.waitFor(() => expect(fresh()).toEqual([]), { timeout: 10_000, interval: 50 })
})

/** A node that logs each start of the Landlock helper but the probe, and whether it starts a spawn server. */
function loggingNode(name: string): { file: string; starts: () => string[] } {
  const file = join(base, name)
  const log = `${file}.log`
  writeFileSync(
    file,
    `#!/bin/sh\ncase "$*" in *--probe*) ;; *spawn-server*) echo server >> ${log};; *) echo command >> ${log};; esac\nexec ${process.execPath} "$@"\n`,
    { mode: 0o755 },
  )
  return { file, starts: () => (existsSync(log) ? readFileSync(log, 'utf8').split('\n').filter(Boolean) : []) }
}

/** Runs an invocation through the real subprocess provider (its launcher, when it has one and `served`). */
async function runVia(ctx: Context, invocation: SandboxInvocation, served = true) {
  const handle = ctx.subprocess.spawn({
    file: invocation.argv[0]!,
    args: invocation.argv.slice(1),
    cwd: ws,
    env: { base: 'exact', set: env },
    kill: { graceMs: 1000 },
    retention: { maxBytes: 1 << 16, headBytes: 1 << 15, tailBytes: 1 << 15 },
    ...(served && invocation.launcher ? { launcher: invocation.launcher } : {}),
  })
  const exit = await handle.exited
  return { exit, output: Buffer.from(exit.output.merged?.head ?? []).toString('utf8') }
}

/** Runs a launched command (the server's child) to its end. */
function collect(child: NonNullable<ReturnType<NonNullable<SandboxInvocation['launcher']>['launch']>>) {
  let output = ''
  child.stdout?.on('data', (chunk: Buffer) => (output += chunk))
  child.stderr?.on('data', (chunk: Buffer) => (output += chunk))
  return new Promise<{ code: number | null; output: string; error?: Error }>((resolve) => {
    child.once('error', (error: Error) => resolve({ code: null, output, error }))
    child.once('close', (code: number | null) => resolve({ code, output }))
  })
}

/** The confinement-relevant lines of a /proc status: no_new_privs, seccomp mode, capabilities. */
const confinement = (status: string) =>
  status
    .split('\n')
    .filter((line) => /^(NoNewPrivs|Seccomp|Cap(Inh|Prm|Eff|Bnd|Amb)):/.test(line))
    .join('\n')

const probe = await new LocalSandbox(new Context(), {
  runner: 'landlock',
  bwrap: 'bwrap',
  node: process.execPath,
  unshare: 'unshare',
  probeTimeoutMs: 5000,
}).describe()
const skip = probe.runner !== 'landlock'
/**
 * Every test here starts a spawn server, which needs the posix_spawn add-on: it only loads on the
 * main thread, so under Stryker's vitest runner (worker threads) they are skipped, as in
 * service.test.ts. In the normal run this is false.
 */
const noServers = spawnServerUnavailable() !== undefined
if (skip)
  console.warn(
    `[sandbox-local] skipping the Landlock spawn server tests: ${probe.rejected.map((r) => `${r.runner}: ${r.reason}`).join('; ')}`,
  )

describe('landlock spawn server', () => {
  it.skipIf(skip || noServers)(
    'the server is confined as a command is: no_new_privs, seccomp, no capabilities, same as a helper per command',
    async () => {
      const node = loggingNode('node-ll-confined')
      const ctx = await landlock(node.file)
      const request = { argv: ['cat', '/proc/self/status'], cwd: ws, policy: policy() }
      const served = await ctx.sandbox.wrap(request)
      expect(served.launcher).toBeDefined()
      const [server] = fresh()
      expect(server).toBeDefined()
      const own = confinement(readFileSync(`/proc/${server}/status`, 'utf8'))
      // Network off: the socket filter is installed (mode 2), every capability is gone.
      expect(own).toMatch(/^NoNewPrivs:\s+1$/m)
      expect(own).toMatch(/^Seccomp:\s+2$/m)
      expect(own).toMatch(/^CapBnd:\s+0+$/m)
      expect(own).toMatch(/^CapEff:\s+0+$/m)
      // A command through the server and one through the helper per command see the same.
      const viaServer = await runVia(ctx, served)
      const direct = await ctx.sandbox.wrap({ ...request, launcher: false })
      expect(direct.launcher).toBeUndefined()
      const viaHelper = await runVia(ctx, direct)
      expect(node.starts()).toEqual(['server', 'command'])
      expect(confinement(viaServer.output)).toBe(own)
      expect(confinement(viaHelper.output)).toBe(own)
    },
  )

  it.skipIf(skip || noServers)(
    'the second command of a policy starts no runner: one helper start for several commands',
    async () => {
      const node = loggingNode('node-ll-count')
      const ctx = await landlock(node.file)
      for (let i = 0; i < 4; i++) {
        const invocation = await ctx.sandbox.wrap({
          argv: ['bash', '-c', `echo x > ${outside}/count-${i} || echo denied-${i}`],
          cwd: ws,
          policy: policy(),
        })
        expect((await runVia(ctx, invocation)).output).toContain(`denied-${i}`)
      }
      // The subprocess provider started all four through the server, and node ran once (as the server).
      expect((ctx.subprocess as LocalSubprocessService).launched).toBe(4)
      expect(node.starts()).toEqual(['server'])
      expect(fresh()).toHaveLength(1)
      expect(readdirSync(outside).filter((name) => name.startsWith('count-'))).toEqual([])
    },
  )

  it.skipIf(skip || noServers)(
    'fail closed: a dead server leaves only the confined argv, a request in flight fails clearly, the next wrap restarts it',
    async () => {
      const node = loggingNode('node-ll-dies')
      const ctx = await landlock(node.file)
      const service = ctx.sandbox as LocalSandbox
      const escapeTo = (tag: string) => ['bash', '-c', `echo x > ${outside}/${tag} || echo denied-${tag}`]

      // 1. A request in flight when the server dies: the command never starts, the error says why.
      const inFlight = await service.wrap({ argv: ['touch', join(ws, 'ran-in-flight')], cwd: ws, policy: policy() })
      const [first] = fresh()
      expect(first).toBeDefined()
      process.kill(first!, 'SIGSTOP')
      // Stopped for sure (state T) before the request goes out, so it cannot read it.
      await vi.waitFor(() => expect(readFileSync(`/proc/${first}/stat`, 'utf8').split(') ')[1]![0]).toBe('T'), {
        timeout: 10_000,
        interval: 10,
      })
      const child = inFlight.launcher!.launch({ env, stdinPipe: false })!
      expect(child.pid).toBeUndefined()
      const ended = collect(child)
      process.kill(first!, 'SIGKILL')
      const result = await ended
      expect(result.error?.message).toMatch(/^the spawn server ended before the command started/)
      expect(existsSync(join(ws, 'ran-in-flight'))).toBe(false)
      await vi.waitFor(() => expect(service.spawnServers).toBe(0), { timeout: 10_000, interval: 20 })

      // 2. An invocation wrapped before the server died: its launcher declines, and what the
      // subprocess provider runs instead is the confined helper per command.
      expect(inFlight.launcher!.launch({ env, stdinPipe: false })).toBeUndefined()
      const stale = await service.wrap({ argv: escapeTo('stale'), cwd: ws, policy: policy() })
      const second = fresh().find((pid) => pid !== first)
      process.kill(second!, 'SIGKILL')
      await vi.waitFor(() => expect(service.spawnServers).toBe(0), { timeout: 10_000, interval: 20 })
      const fallback = await runVia(ctx, stale)
      expect((ctx.subprocess as LocalSubprocessService).launched).toBe(0)
      expect(fallback.output).toContain('denied-stale')
      expect(existsSync(join(outside, 'stale'))).toBe(false)
      expect(node.starts()).toEqual(['server', 'server', 'command'])

      // 3. After two ends the policy keeps to the helper per command: still confined.
      const later = await service.wrap({ argv: escapeTo('later'), cwd: ws, policy: policy() })
      expect(later.launcher).toBeUndefined()
      expect(later.argv).toContain('--')
      expect((await runVia(ctx, later)).output).toContain('denied-later')
      expect(existsSync(join(outside, 'later'))).toBe(false)
    },
  )
})
