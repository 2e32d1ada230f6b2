// The subprocess provider through ctx.codeRuntime with the real seams: subprocess-local, the bwrap
// runner of sandbox-local and sandbox-policy. Each program is a real confined Node process.
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, realpathSync, rmSync } from 'node:fs'
import { createServer, type Server } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Context } from 'cordis'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { CodeRunRequest } from '@dsh/code-runtime'
import SessionStore from '@dsh/session'
import LocalSubprocessService from '@dsh/subprocess-local'
import LocalSandbox from '@dsh/sandbox-local'
import SandboxPolicyService from '@dsh/sandbox-policy'
import SubprocessCodeRuntime, { CHILD_MARKER } from '../src/index.ts'

let base: string
let ws: string
let temp: string
let outside: string
let ctx: Context

async function boot(options: { runner?: 'bwrap' | 'none'; runtime?: Record<string, unknown> } = {}): Promise<Context> {
  const booted = new Context()
  await booted.plugin(SessionStore)
  await booted.plugin(LocalSubprocessService, {} as never)
  await booted.plugin(LocalSandbox, { runner: options.runner ?? 'bwrap', probeCache: false } as never)
  await booted.plugin(SandboxPolicyService, { tempDirs: [temp], fallbackRoot: ws } as never)
  await booted.plugin(SubprocessCodeRuntime, {
    timeoutMs: 10_000,
    maxTimeoutMs: 20_000,
    memoryMb: 64,
    maxLogChars: 200,
    ...options.runtime,
  } as never)
  return booted
}

const dispose = (context: Context) => (context.fiber as unknown as { dispose(): Promise<void> }).dispose()

beforeAll(async () => {
  base = realpathSync(mkdtempSync(join(tmpdir(), 'dsh-code-subprocess-')))
  ws = join(base, 'ws')
  temp = join(base, 'tmp')
  outside = join(base, 'outside')
  for (const dir of [ws, temp, outside]) mkdirSync(dir)
  ctx = await boot()
})
afterAll(async () => {
  await dispose(ctx)
  rmSync(base, { recursive: true, force: true })
})

const run = (request: CodeRunRequest, context = ctx) =>
  context.codeRuntime.run({ cwd: ws, sessionId: 'S1', ...request })

/** Live processes descending from this test process whose command line names the program child. */
function programProcesses(): number[] {
  const parents = new Map<number, number>()
  const marked = new Set<number>()
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8')
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
      if (fields[0] === 'Z') continue
      parents.set(Number(entry), Number(fields[1]))
      if (readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0').includes(CHILD_MARKER)) marked.add(Number(entry))
    } catch {
      // Gone between the listing and the read.
    }
  }
  const descends = (pid: number) => {
    for (let at = pid, hops = 0; at > 1 && hops < 64; hops++) {
      at = parents.get(at) ?? 0
      if (at === process.pid) return true
    }
    return false
  }
  return [...marked].filter(descends)
}

describe('code-runtime-subprocess: the program contract in a confined child', () => {
  it('runs TypeScript with bindings, captures the console, returns JSON; the program sees only PATH and no require', async () => {
    const seen: unknown[] = []
    const launched = () => (ctx.subprocess as unknown as { launched: number }).launched
    const before = launched()
    const result = await run({
      code: [
        'interface Hit { path: string }',
        'const x: number = 2',
        'console.log("start", { x })',
        'console.warn("careful")',
        'process.stdout.write("raw\\n")',
        'const [a, b] = await Promise.all([tools.echo({ v: x }), tools.echo({ v: x + 1 })])',
        'return { a, b, env: Object.keys(process.env), require: typeof require, hit: { path: "p" } as Hit, cwd: process.cwd() }',
      ].join('\n'),
      bindings: { tools: { echo: async (arg) => (seen.push(arg), arg) } },
    })
    expect(result.error).toBeUndefined()
    expect(result.value).toEqual({
      a: { v: 2 },
      b: { v: 3 },
      env: ['PATH'],
      require: 'undefined',
      hit: { path: 'p' },
      cwd: ws,
    })
    expect(result.logs).toEqual([
      { level: 'log', text: 'start { x: 2 }' },
      { level: 'warn', text: 'careful' },
      { level: 'log', text: 'raw' },
    ])
    expect(result.calls).toBe(2)
    expect(seen).toEqual([{ v: 2 }, { v: 3 }])
    // Started through sandbox-local's spawn server (the invocation's launcher), stdin piped.
    expect(launched()).toBe(before + 1)
  })

  it('a throwing program reports the stack of its own code, with its own line numbers', async () => {
    const result = await run({
      code: [
        'type N = number',
        'function explode(n: N): never {',
        '  throw new RangeError(`bad ${n}`)',
        '}',
        'return explode(7)',
      ].join('\n'),
    })
    expect(result.error).toEqual({
      code: 'THROWN',
      message: 'RangeError: bad 7',
      stack: '    at explode (program.ts:3:9)\n    at program.ts:5:8',
    })
  })

  it('time limit, heap cap, binding rejections and bad programs', async () => {
    expect((await run({ code: 'while (true) {}', timeoutMs: 300 })).error).toEqual({
      code: 'TIMEOUT',
      message: 'the program ran longer than its 300 ms limit and was stopped',
    })
    expect(
      (await run({ code: 'const a = []\nwhile (true) a.push(new Array(10000).fill("x" + a.length))', memoryMb: 32 }))
        .error?.code,
    ).toBe('MEMORY')
    const denied = await run({
      code: 'try { await tools.write({}) } catch (e) { return [e.message, e.code] }',
      bindings: {
        tools: {
          write: async () => Promise.reject(Object.assign(new Error('the call was denied'), { code: 'DENIED' })),
        },
      },
    })
    expect(denied.value).toEqual(['the call was denied', 'DENIED'])
    expect((await run({ code: 'let x = (;' })).error).toEqual({
      code: 'SYNTAX',
      message: 'SyntaxError: Unexpected token (line 1, column 10)',
    })
    expect((await run({ code: 'foo(', language: 'javascript' })).error?.code).toBe('SYNTAX')
    expect(
      (await run({ code: 'await tools.reed({})', bindings: { tools: { read: async () => 1 } } })).error?.message,
    ).toBe('TypeError: tools.reed does not exist. Available: read')
    expect((await run({ code: 'return () => 1' })).error?.code).toBe('UNSERIALIZABLE')
    const late = await run({
      code: 'setTimeout(() => { throw new TypeError("late") }, 5)\nawait new Promise((r) => setTimeout(r, 2000))',
    })
    expect(late.error).toMatchObject({ code: 'THROWN', message: 'TypeError: late' })
    expect((await run({ code: 'process.exit(3)' })).error?.message).toMatch(/process.exit\(\) is not available/)
    const logs = await run({ code: 'for (let i = 0; i < 50; i++) console.log("line " + i + " ..........")\nreturn 1' })
    expect(logs.logs.map((l) => l.text).join('').length).toBe(200)
    expect(logs.droppedLogChars).toBeGreaterThan(0)
    expect((await run({ code: 'return input.n * 2', globals: { input: { n: 21 } } })).value).toBe(42)
  })

  it('checks every message at the boundary: raw lines are output, malformed messages and oversized ones end the run', async () => {
    const small = await boot({ runtime: { maxMessageBytes: 4096 } })
    try {
      const fd = 'const fs = process.getBuiltinModule("fs")\n'
      expect((await run({ code: `${fd}fs.writeSync(1, "plain line\\n")\nreturn 1` }, small)).logs).toEqual([
        { level: 'log', text: 'plain line' },
      ])
      const forged = await run(
        {
          code: `${fd}fs.writeSync(1, JSON.stringify({ t: "log", level: "shout", text: "x" }) + "\\n")\nawait new Promise(() => {})`,
        },
        small,
      )
      expect(forged.error).toEqual({
        code: 'INTERNAL',
        message: "the program's process sent a malformed message: a log message has no valid level",
      })
      const big = await run({ code: 'return "x".repeat(10000)' }, small)
      expect(big.error?.message).toBe(
        'the program sent a message larger than the 4096-byte limit (a call argument or return value); pass or return less',
      )
      const unended = await run({ code: `${fd}fs.writeSync(1, "y".repeat(10000))\nawait new Promise(() => {})` }, small)
      expect(unended.error?.code).toBe('INTERNAL')
      const answer = await run(
        {
          code: 'try { await tools.big({}) } catch (e) { return e.code }',
          bindings: { tools: { big: async () => 'z'.repeat(10000) } },
        },
        small,
      )
      expect(answer.value).toBe('MESSAGE_TOO_LARGE')
    } finally {
      await dispose(small)
    }
  })

  it('a value larger than a pipe chunk, with multi-byte characters, arrives whole', async () => {
    const result = await run({ code: 'return "é✓𝄞".repeat(40000)' })
    expect(result.value).toBe('é✓𝄞'.repeat(40000))
  })

  it('resolve() fills defaults and rejects malformed requests, sessionId and cwd included', () => {
    expect(ctx.codeRuntime.resolve({ code: 'x', timeoutMs: 999_999 })).toMatchObject({
      language: 'typescript',
      timeoutMs: 20_000,
      memoryMb: 64,
      filename: 'program.ts',
    })
    expect(() => ctx.codeRuntime.resolve({ code: 'x', cwd: 'relative' })).toThrow(
      'codeRuntime.run: cwd must be an absolute path',
    )
    expect(() => ctx.codeRuntime.resolve({ code: 'x', sessionId: '' })).toThrow(
      'codeRuntime.run: sessionId must be a non-empty string',
    )
  })
})

describe('code-runtime-subprocess: programs are confined like bash (workspace-write)', () => {
  it('(a) a write outside the workspace is refused; inside it works', async () => {
    const target = join(outside, 'escaped.txt')
    const result = await run({
      code: [
        'const fs = process.getBuiltinModule("fs")',
        'fs.writeFileSync("inside.txt", "ok")',
        `try { fs.writeFileSync(${JSON.stringify(target)}, "pwned"); return "written" } catch (e) { return e.code }`,
      ].join('\n'),
    })
    expect(result.value).toBe('EROFS')
    expect(existsSync(target)).toBe(false)
    expect(readFileSync(join(ws, 'inside.txt'), 'utf8')).toBe('ok')
  })

  it('(b) the API key of the dsh process is in neither process.env nor any /proc/*/environ the program can read', async () => {
    // process.env of this (harness) process gets a planted key; /proc/<pid>/environ shows only a
    // process's initial environment, so that part is checked with this process's own entries.
    const planted = 'sk-planted-code-runtime-0123456789'
    const initial = readFileSync('/proc/self/environ', 'latin1')
      .split('\0')
      .filter((entry) => entry.includes('=') && !entry.startsWith('PATH='))
    expect(initial.length).toBeGreaterThan(0)
    const saved = process.env.DEEPSEEK_API_KEY
    process.env.DEEPSEEK_API_KEY = planted
    try {
      const result = await run({
        code: [
          'const fs = process.getBuiltinModule("fs")',
          'const seen: string[] = [JSON.stringify(process.env)]',
          'for (const entry of fs.readdirSync("/proc")) {',
          '  if (!/^\\d+$|^self$/.test(entry)) continue',
          '  try { seen.push(fs.readFileSync(`/proc/${entry}/environ`, "latin1")) } catch {}',
          '}',
          'return seen',
        ].join('\n'),
      })
      expect(result.error).toBeUndefined()
      const seen = result.value as string[]
      expect(seen.length).toBeGreaterThan(1)
      expect(seen.filter((text) => text.includes(planted))).toEqual([])
      expect(seen.flatMap((text) => initial.filter((entry) => text.split(/\0|"/).includes(entry)))).toEqual([])
    } finally {
      if (saved === undefined) delete process.env.DEEPSEEK_API_KEY
      else process.env.DEEPSEEK_API_KEY = saved
    }
  })

  it('(c) a process the program spawns is confined too', async () => {
    const target = join(outside, 'spawned.txt')
    const result = await run({
      code: [
        'const cp = process.getBuiltinModule("child_process")',
        `const r = cp.spawnSync("/bin/sh", ["-c", ${JSON.stringify(`echo pwned > ${target}`)}], { encoding: "utf8" })`,
        'return { status: r.status, stderr: r.stderr }',
      ].join('\n'),
    })
    expect(result.value).toMatchObject({ status: expect.not.stringMatching(/^0$/) })
    expect((result.value as { stderr: string }).stderr).toMatch(/Read-only file system/)
    expect(existsSync(target)).toBe(false)
  })

  it('(d) the network is off: a loopback server of the host is not reached', async () => {
    let connections = 0
    const server: Server = createServer((socket) => {
      connections++
      socket.end('hello from the host\n')
    })
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    const port = (server.address() as { port: number }).port
    try {
      const result = await run({
        code: [
          'const net = process.getBuiltinModule("net")',
          'return await new Promise((resolve) => {',
          `  const socket = net.connect(${port}, "127.0.0.1")`,
          '  socket.on("data", (d) => resolve("connected: " + d))',
          '  socket.on("error", (e) => resolve(e.code))',
          '})',
        ].join('\n'),
      })
      expect(result.value).toMatch(/^E(CONNREFUSED|NETUNREACH|ACCES|PERM)$/)
      // Positive control: the same server answers this process.
      const { connect } = await import('node:net')
      const reply = await new Promise<string>((resolve, reject) =>
        connect(port, '127.0.0.1')
          .on('data', (d) => resolve(String(d)))
          .on('error', reject),
      )
      expect(reply).toBe('hello from the host\n')
      expect(connections).toBe(1)
    } finally {
      server.close()
    }
  })

  it('cancellation kills the program process (and its group)', async () => {
    const controller = new AbortController()
    let during: number[] = []
    const result = await run({
      code: 'void tools.ready({})\nfor (;;) {}',
      signal: controller.signal,
      bindings: {
        tools: {
          ready: () => {
            during = programProcesses()
            controller.abort(new Error('user pressed stop'))
            return new Promise(() => {})
          },
        },
      },
    })
    expect(result.error).toEqual({
      code: 'CANCELLED',
      message: 'the run was cancelled (user pressed stop) and the program was stopped',
    })
    expect(during.length).toBeGreaterThan(0)
    await expect.poll(() => programProcesses(), { timeout: 10_000, interval: 50 }).toEqual([])
  })

  it('danger-full-access runs unconfined, still without the harness environment', async () => {
    const danger = await boot()
    try {
      danger.sandboxPolicy.setMode('S-danger', 'danger-full-access')
      const target = join(outside, 'full-access.txt')
      const result = await run(
        {
          sessionId: 'S-danger',
          code: `process.getBuiltinModule("fs").writeFileSync(${JSON.stringify(target)}, "ok")\nreturn Object.keys(process.env)`,
        },
        danger,
      )
      expect(result.value).toEqual(['PATH'])
      expect(readFileSync(target, 'utf8')).toBe('ok')
    } finally {
      await dispose(danger)
    }
  })

  it('without a sandbox runner a confining mode refuses the run and starts nothing', async () => {
    const bare = await boot({ runner: 'none' })
    try {
      const target = join(outside, 'no-runner.txt')
      const result = await run(
        { code: `process.getBuiltinModule("fs").writeFileSync(${JSON.stringify(target)}, "x")` },
        bare,
      )
      expect(result.error?.code).toBe('REFUSED')
      expect(result.error?.message).toMatch(
        /^the program was not run because the session's workspace-write sandbox cannot confine it: no working sandbox runner/,
      )
      expect(existsSync(target)).toBe(false)
    } finally {
      await dispose(bare)
    }
  })
})
