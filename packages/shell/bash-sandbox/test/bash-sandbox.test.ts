import { DEFAULT_SPILL_DIR } from '@dsh/bash-local'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import {
  chmodSync,
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  realpathSync,
  rmSync,
  writeFileSync,
} from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Context } from 'cordis'
import SessionStore from '@dsh/session'
import LocalSubprocessService from '@dsh/subprocess-local'
import LocalSandbox from '@dsh/sandbox-local'
import SandboxPolicyService from '@dsh/sandbox-policy'
import ApprovalService, { type ApprovalAnswer, type ApprovalRequest } from '@dsh/user-approval'
import ToolRegistry, { type ToolResultPayload } from '@dsh/tools'
import ShellEnvRegistry from '@dsh/shell-env'
import * as ToolBash from '@dsh/tool-bash'
import type { ShellResult, ShellSpec } from '@dsh/shell'
import SandboxedBashExecutor, { isSandboxedShell } from '../src/index.ts'

let base: string
let ws: string
let temp: string
let outside: string
let spill: string

beforeAll(() => {
  base = realpathSync(mkdtempSync(join(tmpdir(), 'dsh-bash-sandbox-')))
  ws = join(base, 'ws')
  temp = join(base, 'tmp')
  outside = join(base, 'outside')
  // Outside the writable roots: bash-sandbox keeps its spill dir read-only inside the sandbox, which
  // Landlock can only do for a dir that no writable root contains.
  spill = join(base, 'spill')
  for (const dir of [ws, temp, outside]) mkdirSync(dir)
})
afterAll(() => rmSync(base, { recursive: true, force: true }))

interface Booted {
  ctx: Context
  asked: ApprovalRequest[]
}

async function boot(
  options: {
    runner?: string
    answer?: (request: ApprovalRequest) => ApprovalAnswer | Promise<ApprovalAnswer>
    approval?: boolean
    shell?: Record<string, unknown>
  } = {},
): Promise<Booted> {
  const ctx = new Context()
  const asked: ApprovalRequest[] = []
  await ctx.plugin(SessionStore)
  await ctx.plugin(LocalSubprocessService, {} as never)
  await ctx.plugin(LocalSandbox, { runner: (options.runner ?? 'bwrap') as never })
  await ctx.plugin(SandboxPolicyService, { tempDirs: [temp] })
  await ctx.plugin(SandboxedBashExecutor, {
    defaultTimeoutMs: 10_000,
    maxTimeoutMs: 20_000,
    killGraceMs: 200,
    spillDir: spill,
    ...options.shell,
  } as never)
  if (options.approval !== false) {
    await ctx.plugin(ApprovalService, {} as never)
    if (options.answer) {
      const answer = options.answer
      ctx.approval.registerAnswerer({ name: 'test', answer: (request) => (asked.push(request), answer(request)) })
    }
  }
  return { ctx, asked }
}

async function sh(
  ctx: Context,
  command: string,
  extra: Record<string, unknown> = {},
): Promise<{ spec: ShellSpec; result: ShellResult; text: string }> {
  const spec = await ctx.shell.resolve({ command, cwd: ws, ...extra })
  const result = await ctx.shell.run(spec, (extra.runOptions as never) ?? {})
  return { spec, result, text: result.output.head + result.output.tail }
}

describe('confined execution', () => {
  it('runs inside the workspace and reports the sandbox facts', async () => {
    const { ctx } = await boot()
    expect(isSandboxedShell(ctx.shell)).toBe(true)
    const launched = () => (ctx.subprocess as unknown as { launched: number }).launched
    const before = launched()
    const { spec, result, text } = await sh(ctx, 'echo hi > note.txt && cat note.txt')
    expect(text).toBe('hi\n')
    // bwrap commands start through sandbox-local's spawn server (the invocation's launcher).
    expect(launched()).toBe(before + 1)
    expect(result).toMatchObject({
      status: 'exited',
      exitCode: 0,
      sandbox: { mode: 'workspace-write', runner: 'bwrap', enforcement: 'enforced' },
    })
    expect(spec.executor).toBe('bash-sandbox')
    expect(spec.sandbox?.policy.writableRoots).toEqual([ws, temp])
  })

  it('spawns the runner itself, one ordered stream, with no sh in front of it (bwrap and Landlock)', async () => {
    for (const runner of ['bwrap', 'landlock']) {
      const { ctx } = await boot({ runner })
      const info = await ctx.sandbox.describe()
      if (info.runner !== runner) continue // Landlock is not available on every kernel
      const spawned: Array<{ file: string; stderr?: string }> = []
      const spawn = ctx.subprocess.spawn.bind(ctx.subprocess)
      ;(ctx.subprocess as { spawn: typeof spawn }).spawn = (spec) => (
        spawned.push({ file: spec.file, stderr: spec.stderr }), spawn(spec)
      )
      const { result, text } = await sh(ctx, 'echo one; echo two >&2; echo three; echo four >&2')
      expect(result).toMatchObject({ status: 'exited', exitCode: 0, sandbox: { runner } })
      expect(text).toBe('one\ntwo\nthree\nfour\n')
      // The runner's own wrapper does the 2>&1, so the spawn adds no `sh -c 'exec ... 2>&1'`.
      expect(spawned).toHaveLength(1)
      expect(spawned[0].file).not.toMatch(/(^|\/)sh$/)
      expect(spawned[0].stderr).toBe('pipe')
    }
  })

  it('a denied write says so, naming the policy and the way out', async () => {
    const { ctx } = await boot()
    const { spec, result } = await sh(ctx, `echo x > ${outside}/denied`)
    expect(existsSync(join(outside, 'denied'))).toBe(false)
    expect(result.sandbox?.denial).toMatchObject({
      kind: 'filesystem',
      evidence: expect.stringContaining('Read-only file system'),
    })
    const note = spec.notes.find((n) => n.startsWith('sandbox:'))
    expect(note).toContain('workspace-write sandbox (bwrap)')
    expect(note).toContain(`may write only under ${ws}, ${temp}`)
  })

  it('a denied connect is reported as a network denial', async () => {
    const { ctx } = await boot()
    const { result } = await sh(ctx, 'exec 3<>/dev/tcp/127.0.0.1/9')
    expect(result.exitCode).not.toBe(0)
    expect(result.sandbox?.denial?.kind).toBe('network')
  })

  it('a timeout stops the confined command and its children', async () => {
    const { ctx } = await boot()
    const spec = await ctx.shell.resolve({ command: 'sleep 30 & sleep 30; echo never', cwd: ws, timeoutMs: 300 })
    const result = await ctx.shell.run(spec)
    expect(result.status).toBe('timeout')
    expect(result.output.head).not.toContain('never')
  })

  it('no runner: fails closed and runs nothing', async () => {
    const { ctx } = await boot({ runner: 'none' })
    const { result } = await sh(ctx, `touch ${ws}/ran`)
    expect(result.status).toBe('failed')
    expect(result.error?.code).toBe('SANDBOX_UNAVAILABLE')
    expect(existsSync(join(ws, 'ran'))).toBe(false)
  })

  it('the default spill base (in the dsh home) is resolved once, not per command', async () => {
    const { ctx } = await boot({ shell: { spillDir: DEFAULT_SPILL_DIR } })
    const session = ctx.sessions.create({ cwd: ws })
    ctx.sandboxPolicy.setMode(session.id, 'danger-full-access')
    let walks = 0
    const protectedPaths = ctx.sandboxPolicy.protectedPaths.bind(ctx.sandboxPolicy)
    ;(ctx.sandboxPolicy as { protectedPaths: typeof protectedPaths }).protectedPaths = () => (walks++, protectedPaths())
    for (const word of ['one', 'two', 'three'])
      expect((await sh(ctx, `echo ${word}`, { sessionId: session.id })).text).toBe(`${word}\n`)
    expect(walks).toBe(1)
  })

  it('a session in danger-full-access runs unconfined; the session comes from DSH_SESSION_ID too', async () => {
    const { ctx } = await boot()
    const session = ctx.sessions.create({ cwd: ws })
    ctx.sandboxPolicy.setMode(session.id, 'danger-full-access')
    const { result } = await sh(ctx, `echo x > ${outside}/free`, { env: { DSH_SESSION_ID: session.id } })
    expect(result.sandbox).toMatchObject({ mode: 'danger-full-access', enforcement: 'none' })
    expect(readFileSync(join(outside, 'free'), 'utf8')).toBe('x\n')
    // Unconfined, bash is spawned alone (no sh in front) and merges stderr itself, in order.
    const spawned: Array<{ file: string; stderr?: string }> = []
    const spawn = ctx.subprocess.spawn.bind(ctx.subprocess)
    ;(ctx.subprocess as { spawn: typeof spawn }).spawn = (spec) => (
      spawned.push({ file: spec.file, stderr: spec.stderr }), spawn(spec)
    )
    const merged = await sh(ctx, 'echo one; echo two >&2; echo three', { sessionId: session.id })
    expect(merged.text).toBe('one\ntwo\nthree\n')
    expect(spawned).toEqual([{ file: 'bash', stderr: 'pipe' }])
    ;(ctx.subprocess as { spawn: typeof spawn }).spawn = spawn
    const ro = ctx.sessions.create({ cwd: ws })
    ctx.sandboxPolicy.setMode(ro.id, 'read-only')
    const denied = await sh(ctx, 'echo x > inside', { sessionId: ro.id })
    expect(denied.result.sandbox?.mode).toBe('read-only')
    expect(existsSync(join(ws, 'inside'))).toBe(false)
  })

  it('Landlock as the forced runner confines the same way', async () => {
    const { ctx } = await boot({ runner: 'landlock' })
    const info = await ctx.sandbox.describe()
    if (info.runner !== 'landlock') {
      console.warn(`[bash-sandbox] skipping the Landlock case: ${info.rejected.map((r) => r.reason).join('; ')}`)
      return
    }
    const { result, text } = await sh(ctx, `echo in > ll.txt && cat ll.txt; echo x > ${outside}/ll || true`)
    expect(text).toContain('in\n')
    expect(result.sandbox?.runner).toBe('landlock')
    expect(existsSync(join(outside, 'll'))).toBe(false)
  })
})

describe('escalation', () => {
  const justification = 'it must write the build cache outside the workspace'

  it('allowed-once runs exactly that call unconfined; the next escalation asks again', async () => {
    const { ctx, asked } = await boot({ answer: () => ({ decision: 'allowed-once' }) })
    const session = ctx.sessions.create({ cwd: ws })
    const { spec, result } = await sh(ctx, `echo x > ${outside}/escalated`, {
      sessionId: session.id,
      callId: 'call-7',
      sandboxEscalation: { justification },
    })
    expect(readFileSync(join(outside, 'escalated'), 'utf8')).toBe('x\n')
    expect(result.sandbox).toMatchObject({
      enforcement: 'none',
      escalation: { decision: 'allowed-once', unconfined: true },
    })
    expect(spec.notes).toContain('sandbox: the user approved running this command outside the sandbox (this once).')
    expect(asked).toHaveLength(1)
    expect(asked[0]).toMatchObject({
      kind: 'command',
      sessionId: session.id,
      callId: 'call-7',
      action: { command: `echo x > ${outside}/escalated`, cwd: ws, sandbox: 'none' },
    })
    expect(asked[0].detail).toContain(justification)
    // Without the field the next call is confined again.
    const plain = await sh(ctx, `echo y > ${outside}/after`, { sessionId: session.id })
    expect(existsSync(join(outside, 'after'))).toBe(false)
    expect(plain.result.sandbox?.enforcement).toBe('enforced')
    await sh(ctx, `echo z > ${outside}/again`, { sessionId: session.id, sandboxEscalation: { justification } })
    expect(asked).toHaveLength(2)
  })

  it('a rejection reaches the caller as a refusal; nothing runs', async () => {
    const { ctx } = await boot({ answer: () => ({ decision: 'rejected', message: 'use the workspace instead' }) })
    const { spec, result } = await sh(ctx, `echo x > ${outside}/rejected`, { sandboxEscalation: { justification } })
    expect(existsSync(join(outside, 'rejected'))).toBe(false)
    expect(result).toMatchObject({
      status: 'failed',
      error: { code: 'ESCALATION_REJECTED' },
      sandbox: { escalation: { decision: 'rejected', unconfined: false } },
    })
    expect(spec.notes.join('\n')).toContain('the user refused to run this command outside the sandbox')
    expect(spec.notes.join('\n')).toContain('use the workspace instead')
  })

  it('no approval service, or no answerer: unavailable, fails closed', async () => {
    for (const options of [{ approval: false }, {}]) {
      const { ctx } = await boot(options)
      const { result } = await sh(ctx, `echo x > ${outside}/unavailable`, { sandboxEscalation: { justification } })
      expect(result.status).toBe('failed')
      expect(result.error?.code).toBe('ESCALATION_UNAVAILABLE')
      expect(existsSync(join(outside, 'unavailable'))).toBe(false)
    }
  })

  it('an approval pending when the call is cancelled resolves cancelled and runs nothing', async () => {
    const { ctx, asked } = await boot({ answer: () => new Promise<ApprovalAnswer>(() => {}) })
    const controller = new AbortController()
    const spec = await ctx.shell.resolve({
      command: `echo x > ${outside}/cancelled`,
      cwd: ws,
      sandboxEscalation: { justification },
    })
    const running = ctx.shell.run(spec, { signal: controller.signal })
    while (asked.length === 0) await new Promise((resolve) => setTimeout(resolve, 5))
    controller.abort()
    const result = await running
    expect(result.status).toBe('cancelled')
    expect(result.sandbox?.escalation?.decision).toBe('cancelled')
    expect(existsSync(join(outside, 'cancelled'))).toBe(false)
  })

  it('refuses a malformed escalation and foreign specs', async () => {
    const { ctx } = await boot()
    for (const bad of [{}, { justification: '  ' }, 'please']) {
      await expect(
        ctx.shell.resolve({ command: 'true', cwd: ws, sandboxEscalation: bad as never }),
      ).rejects.toMatchObject({ code: 'INVALID_REQUEST' })
    }
    for (const callId of ['', 7]) {
      await expect(ctx.shell.resolve({ command: 'true', cwd: ws, callId: callId as never })).rejects.toMatchObject({
        code: 'INVALID_REQUEST',
        message: expect.stringContaining('callId must be a non-empty string'),
      })
    }
    const spec = await ctx.shell.resolve({ command: 'true', cwd: ws })
    await expect(ctx.shell.run({ ...spec, executor: 'bash-local' })).rejects.toMatchObject({ code: 'FOREIGN_SPEC' })
  })
})

describe('through the bash tool', () => {
  it('the model reads the denial note, which offers sandbox_escalation, and the status line', async () => {
    const { ctx } = await boot()
    await ctx.plugin(ToolRegistry, {} as never)
    await ctx.plugin(ShellEnvRegistry, { home: '/srv/dsh' })
    await ctx.plugin(ToolBash, { output: { headBytes: 2000, tailBytes: 2000 } })
    const session = ctx.sessions.create({ cwd: ws })
    const result: ToolResultPayload = await ctx.tools.execute(
      {
        callId: 'c1',
        name: 'bash',
        arguments: JSON.stringify({ command: `echo x > ${outside}/tool`, description: 'write outside' }),
      },
      { cwd: ws, sessionId: session.id },
    )
    const text = result.message.content.map((block) => (block.type === 'text' ? block.text : '')).join('')
    expect(text).toContain('Read-only file system')
    expect(text).toContain(
      '[note: sandbox: this command ran in the workspace-write sandbox (bwrap) and a write was probably blocked',
    )
    // Over a confining shell the bash tool offers sandbox_escalation, and the note says how to use it.
    expect(ctx.tools.get('bash')?.parameters.properties).toHaveProperty('sandbox_escalation')
    expect(text).toContain('"sandbox_escalation": {"justification": "<why>"}')
    expect(text).toMatch(/\[exit code: 1\]$/)
  })
})

it('composes from rows without config, in any order', async () => {
  const ctx = new Context()
  const executor = ctx.plugin(SandboxedBashExecutor)
  // Positive control: a row with nothing to wait for, added after the executor, is active once
  // awaited; an executor that did not wait for its services would have provided `shell` by then.
  await ctx.plugin({ name: 'control', apply() {} })
  expect(ctx.get('shell')).toBeUndefined()
  await ctx.plugin(SandboxPolicyService)
  await ctx.plugin(LocalSandbox)
  await ctx.plugin(LocalSubprocessService)
  await executor
  expect(ctx.shell.limits).toEqual({ defaultTimeoutMs: 120_000, maxTimeoutMs: 600_000 })
  const spec = await ctx.shell.resolve({ command: 'echo ok', cwd: ws })
  expect((await ctx.shell.run(spec)).output.head).toBe('ok\n')
})

describe('spill files of long output', () => {
  const small = { output: { maxBytes: 4096, headBytes: 512, tailBytes: 512 } }
  const long = "head -c 20000 /dev/zero | tr '\\0' x"

  it('a confined command cannot swap the spill dir for a symlink, even when it lies in a writable temp dir', async () => {
    const explicit = join(temp, 'spill-explicit')
    const target = join(outside, 'spill-target')
    mkdirSync(target)
    const { ctx } = await boot({ shell: { ...small, spillDir: explicit } })
    const id = ctx.sessions.create({ cwd: ws }).id
    const first = await sh(ctx, long, { sessionId: id })
    expect(first.result.output.spillPath).toBe(join(explicit, id, readdirSync(join(explicit, id))[0]))
    // The attack: replace the spill dir (and the session's dir) with links to a directory of the attacker's choice.
    const attack = await sh(
      ctx,
      `rm -rf ${explicit}/${id} ; ln -s ${target} ${explicit}/${id} || echo swap-denied; rm -rf ${explicit} ; ln -sfn ${target} ${explicit} || echo root-swap-denied`,
      { sessionId: id },
    )
    expect(attack.text).toContain('swap-denied')
    const second = await sh(ctx, long, { sessionId: id })
    expect(second.result.output.spillPath?.startsWith(join(explicit, id) + '/')).toBe(true)
    expect(lstatSync(explicit).isSymbolicLink()).toBe(false)
    expect(lstatSync(join(explicit, id)).isSymbolicLink()).toBe(false)
    expect(readdirSync(target)).toEqual([])
  })

  it("by default spills per session under the read-only dsh home, out of the sandbox's reach", async () => {
    const home = join(temp, 'dsh-home')
    const saved = process.env.DSH_HOME
    process.env.DSH_HOME = home
    try {
      const { ctx } = await boot({ shell: { ...small, spillDir: undefined } })
      const id = ctx.sessions.create({ cwd: ws }).id
      const first = await sh(ctx, long, { sessionId: id })
      const dir = join(home, 'shell-output', id)
      expect(first.result.output.spillPath?.startsWith(dir + '/')).toBe(true)
      const attack = await sh(
        ctx,
        `rm -rf ${dir} ; ln -s ${outside} ${dir} || echo swap-denied; echo '- insert: []' > ${home}/cordis.patch.yml || echo patch-denied`,
        { sessionId: id },
      )
      expect(attack.text).toContain('swap-denied')
      expect(attack.text).toContain('patch-denied')
      expect(lstatSync(dir).isSymbolicLink()).toBe(false)
      expect(existsSync(join(home, 'cordis.patch.yml'))).toBe(false)
    } finally {
      if (saved === undefined) delete process.env.DSH_HOME
      else process.env.DSH_HOME = saved
    }
  })
})

describe('the runner probe', () => {
  /** A stand-in bwrap that records that it ran (the probe's only observable effect). */
  function fakeBwrap(body: string): string {
    const file = join(base, `fake-bwrap-${Math.random().toString(36).slice(2)}.sh`)
    writeFileSync(file, `#!/bin/sh\n${body}\n`)
    chmodSync(file, 0o755)
    return file
  }

  async function bootProbe(defaultMode: string, bwrap: string) {
    const ctx = new Context()
    await ctx.plugin(SessionStore)
    await ctx.plugin(LocalSubprocessService, {} as never)
    const sandbox = ctx.plugin(LocalSandbox, { runner: 'bwrap', bwrap } as never)
    await sandbox
    await ctx.plugin(SandboxPolicyService, { tempDirs: [temp], defaultMode: defaultMode as never })
    await ctx.plugin(SandboxedBashExecutor, {
      defaultTimeoutMs: 10_000,
      maxTimeoutMs: 20_000,
      killGraceMs: 200,
      spillDir: spill,
    } as never)
    return { ctx, sandbox }
  }

  /**
   * Emits what app-boot emits once every row is active (and `more`, e.g. app/stopping), then runs
   * whatever timer that scheduled: the prewarm timer's probe child is spawned synchronously when it
   * fires, and the sandbox's dispose waits for its probe children, so after `sandbox.dispose()` a
   * probe that was started has left its marker. No wall-clock wait either way.
   */
  async function readyAndRunTimers(
    ctx: Context,
    more?: (events: { parallel(name: string, ...args: unknown[]): Promise<void> }) => Promise<void>,
  ) {
    const events = ctx as unknown as { parallel(name: string, ...args: unknown[]): Promise<void> }
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] })
    try {
      await events.parallel('app/ready')
      await more?.(events)
      // Only the timers pending now (the prewarm delay), not the probe's own kill timer it starts.
      vi.runOnlyPendingTimers()
    } finally {
      vi.useRealTimers()
    }
  }

  it('danger-full-access never starts a probe', async () => {
    const marker = join(base, 'probe-ran-danger')
    const { ctx, sandbox } = await bootProbe('danger-full-access', fakeBwrap(`touch ${marker}`))
    await readyAndRunTimers(ctx)
    const { text } = await sh(ctx, 'echo unconfined')
    expect(text).toBe('unconfined\n')
    await sandbox.dispose()
    expect(existsSync(marker)).toBe(false)
  })

  it('an app that stops right after app/ready (dsh --help) never starts a probe', async () => {
    const marker = join(base, 'probe-ran-stopped')
    const { ctx, sandbox } = await bootProbe('workspace-write', fakeBwrap(`touch ${marker}`))
    await readyAndRunTimers(ctx, (events) => events.parallel('app/stopping', { reason: 'exit', code: 0 }))
    await sandbox.dispose()
    expect(existsSync(marker)).toBe(false)
  })

  it('a confining default mode still probes in the background soon after app/ready', async () => {
    const marker = join(base, 'probe-ran-ready')
    const { ctx, sandbox } = await bootProbe('workspace-write', fakeBwrap(`touch ${marker}`))
    // The positive control of the two tests above: the same steps do start the probe here.
    await readyAndRunTimers(ctx)
    await sandbox.dispose()
    expect(existsSync(marker)).toBe(true)
  })

  it('unloading the plugin ends a running probe and reaps it', async () => {
    const pidFile = join(base, 'probe-pid')
    const { ctx, sandbox } = await bootProbe('workspace-write', fakeBwrap(`echo $$ > ${pidFile}; exec sleep 30`))
    await (ctx as unknown as { parallel(name: string): Promise<void> }).parallel('app/ready')
    for (let i = 0; i < 500 && !(existsSync(pidFile) && readFileSync(pidFile, 'utf8').trim()); i++)
      await new Promise((resolve) => setTimeout(resolve, 10))
    const pid = Number(readFileSync(pidFile, 'utf8'))
    expect(pid).toBeGreaterThan(0)
    await sandbox.dispose()
    let alive = true
    try {
      process.kill(pid, 0)
    } catch {
      alive = false
    }
    if (alive) process.kill(pid, 'SIGKILL')
    expect(alive).toBe(false)
  })
})

describe("readying the sandbox at a session's first step", () => {
  it('starts the spawn server its commands then use, once per session, and none for danger-full-access', async () => {
    const { ctx } = await boot()
    const service = ctx.sandbox as unknown as { spawnServers: number }
    const launched = () => (ctx.subprocess as unknown as { launched: number }).launched
    const step = (session: unknown) =>
      (
        ctx as unknown as { waterfall(name: string, payload: unknown, next: () => Promise<unknown>): Promise<unknown> }
      ).waterfall('agent/pre-step', { agent: { session, cwd: ws }, turn: 0, step: 0, messages: [] }, async () => ({
        action: 'enter',
        messages: [],
      }))
    const session = ctx.sessions.create({ cwd: ws })
    await step(session)
    await vi.waitFor(() => expect(service.spawnServers).toBeGreaterThan(0), { timeout: 30_000, interval: 10 })
    expect(service.spawnServers).toBe(1)
    expect(launched()).toBe(0) // readied, nothing run
    await step(session)
    expect((await sh(ctx, 'echo first', { sessionId: session.id })).text).toBe('first\n')
    expect(service.spawnServers).toBe(1) // the command went to the readied server
    expect(launched()).toBe(1)

    const free = ctx.sessions.create({ cwd: ws })
    ctx.sandboxPolicy.setMode(free.id, 'danger-full-access')
    await step(free)
    // Positive control through the same path: a confined session in another workspace (so another
    // policy), stepped after it, readies its own server and its command runs there; a server
    // readied for the unconfined one would have started first.
    const elsewhere = join(base, 'ws-later')
    mkdirSync(elsewhere, { recursive: true })
    const later = ctx.sessions.create({ cwd: elsewhere })
    await step(later)
    await vi.waitFor(() => expect(service.spawnServers).toBeGreaterThan(1), { timeout: 30_000, interval: 10 })
    expect((await sh(ctx, 'echo later', { sessionId: later.id })).text).toBe('later\n')
    expect(service.spawnServers).toBe(2)
  })
})

describe('service references', () => {
  it('reads its injected services once, not per call, and follows a replaced subprocess service', async () => {
    const ctx = new Context()
    await ctx.plugin(SessionStore)
    const subprocess = ctx.plugin(LocalSubprocessService, {} as never)
    await subprocess
    await ctx.plugin(LocalSandbox, { runner: 'bwrap' } as never)
    await ctx.plugin(SandboxPolicyService, { tempDirs: [temp] })
    const executor = ctx.plugin(SandboxedBashExecutor, { killGraceMs: 200, spillDir: spill } as never)
    await executor
    const reads: string[] = []
    ctx.on('internal/get', (_ctx, name, _error, next) => {
      if (['subprocess', 'sandbox', 'sandboxPolicy'].includes(name)) reads.push(name)
      return next()
    })
    const id = ctx.sessions.create({ cwd: ws }).id
    expect((await sh(ctx, 'echo confined', { sessionId: id })).text).toBe('confined\n')
    ctx.sandboxPolicy.setMode(id, 'danger-full-access')
    expect((await sh(ctx, 'echo unconfined', { sessionId: id })).text).toBe('unconfined\n')
    expect(reads).toEqual([])
    // A new subprocess provider restarts the executor: the old (disposed) service is never used.
    await subprocess.dispose()
    await ctx.plugin(LocalSubprocessService, {} as never)
    await executor
    expect((await sh(ctx, 'echo again', { sessionId: id })).text).toBe('again\n')
  })
})
