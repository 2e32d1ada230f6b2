// The worker-thread provider through ctx.codeRuntime: real workers, real termination.
import { Context } from 'cordis'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { CodeRunRequest } from '@dsh/code-runtime'
import SandboxPolicyService from '@dsh/sandbox-policy'
import WorkerThreadCodeRuntime, { stripTypes } from '../src/index.ts'

let ctx: Context
beforeAll(async () => {
  ctx = new Context()
  await ctx.plugin(WorkerThreadCodeRuntime, { timeoutMs: 5_000, maxTimeoutMs: 20_000, memoryMb: 64, maxLogChars: 200 })
})
afterAll(async () => {
  await (ctx.fiber as unknown as { dispose(): Promise<void> }).dispose()
})

const run = (request: CodeRunRequest) => ctx.codeRuntime.run(request)

describe('code-runtime-worker-thread', () => {
  it('runs TypeScript with bindings, captures the console, returns JSON, and gives the program an empty environment and no require', async () => {
    const seen: unknown[] = []
    const result = await run({
      code: [
        'interface Hit { path: string }',
        'const x: number = 2',
        'console.log("start", { x })',
        'console.warn("careful")',
        'const [a, b] = await Promise.all([tools.echo({ v: x }), tools.echo({ v: x + 1 })])',
        'return { a, b, env: Object.keys(process.env).length, require: typeof require, hit: { path: "p" } as Hit }',
      ].join('\n'),
      bindings: { tools: { echo: async (arg) => (seen.push(arg), arg) } },
    })
    expect(result.error).toBeUndefined()
    expect(result.value).toEqual({ a: { v: 2 }, b: { v: 3 }, env: 0, require: 'undefined', hit: { path: 'p' } })
    expect(result.logs).toEqual([
      { level: 'log', text: 'start { x: 2 }' },
      { level: 'warn', text: 'careful' },
    ])
    expect(result.calls).toBe(2)
    expect(seen).toEqual([{ v: 2 }, { v: 3 }])
  })

  it('a throwing program reports the stack of its own code, with its own line numbers, none of ours', async () => {
    const result = await run({
      code: [
        'type N = number',
        'function explode(n: N): never {',
        '  throw new RangeError(`bad ${n}`)',
        '}',
        'return explode(7)',
      ].join('\n'),
    })
    expect(result.error?.code).toBe('THROWN')
    expect(result.error?.message).toBe('RangeError: bad 7')
    expect(result.error?.stack).toBe('    at explode (program.ts:3:9)\n    at program.ts:5:8')
    expect(result.error?.stack).not.toMatch(/worker|node:|run\.ts/)
  })

  it('an infinite loop is stopped by the time limit', async () => {
    const result = await run({ code: 'while (true) {}', timeoutMs: 300 })
    expect(result.error).toEqual({
      code: 'TIMEOUT',
      message: 'the program ran longer than its 300 ms limit and was stopped',
    })
  })

  it('a program over its heap cap is stopped', async () => {
    const result = await run({
      code: 'const a = []\nwhile (true) a.push(new Array(10000).fill("x" + a.length))',
      memoryMb: 32,
    })
    expect(result.error?.code).toBe('MEMORY')
  })

  it('aborting the signal terminates a busy program and aborts pending binding calls', async () => {
    const controller = new AbortController()
    let bindingSignal: AbortSignal | undefined
    const pending = run({
      code: 'await tools.wait({})',
      signal: controller.signal,
      bindings: {
        tools: {
          wait: (_arg, call) =>
            new Promise(() => {
              bindingSignal = call.signal
              controller.abort(new Error('user pressed stop'))
            }),
        },
      },
    })
    const result = await pending
    expect(result.error).toEqual({
      code: 'CANCELLED',
      message: 'the run was cancelled (user pressed stop) and the program was stopped',
    })
    expect(bindingSignal?.aborted).toBe(true)
    const busy = new AbortController()
    setTimeout(() => busy.abort(), 200)
    expect((await run({ code: 'for (;;) {}', signal: busy.signal })).error?.code).toBe('CANCELLED')
  })

  it('a binding rejection is thrown in the program with its message and code', async () => {
    const result = await run({
      code: 'try { await tools.write({}) } catch (e) { return [e.message, e.code] }',
      bindings: {
        tools: {
          write: async () => Promise.reject(Object.assign(new Error('the call was denied'), { code: 'DENIED' })),
        },
      },
    })
    expect(result.value).toEqual(['the call was denied', 'DENIED'])
  })

  it('bad programs fail with a clear error: syntax, unknown binding, unserialisable value, a throw in a timer', async () => {
    expect((await run({ code: 'let x = (;' })).error).toEqual({
      code: 'SYNTAX',
      message: 'SyntaxError: Unexpected token (line 1, column 10)',
    })
    expect((await run({ code: 'foo(', language: 'javascript' })).error?.code).toBe('SYNTAX')
    const unknown = await run({ code: 'await tools.reed({})', bindings: { tools: { read: async () => 1 } } })
    expect(unknown.error?.message).toBe('TypeError: tools.reed does not exist. Available: read')
    expect((await run({ code: 'return () => 1' })).error?.code).toBe('UNSERIALIZABLE')
    const cyclic = await run({ code: 'const a: any = {}; a.a = a; return a' })
    expect(cyclic.error?.code).toBe('UNSERIALIZABLE')
    const late = await run({
      code: 'setTimeout(() => { throw new TypeError("late") }, 5)\nawait new Promise((r) => setTimeout(r, 2000))',
    })
    expect(late.error).toMatchObject({ code: 'THROWN', message: 'TypeError: late' })
    expect((await run({ code: 'process.exit(3)' })).error?.message).toMatch(/process.exit\(\) is not available/)
  })

  it('keeps console output up to maxLogChars and counts the rest', async () => {
    const result = await run({
      code: 'for (let i = 0; i < 50; i++) console.log("line " + i + " ..........")\nreturn 1',
    })
    expect(result.logs.map((l) => l.text).join('').length).toBe(200)
    expect(result.droppedLogChars).toBeGreaterThan(0)
    expect(result.value).toBe(1)
  })

  it('resolve() fills defaults, caps the timeout, and rejects malformed requests', () => {
    const resolved = ctx.codeRuntime.resolve({ code: 'x', timeoutMs: 999_999 })
    expect(resolved).toMatchObject({
      language: 'typescript',
      timeoutMs: 20_000,
      memoryMb: 64,
      filename: 'program.ts',
      bindings: {},
      globals: {},
    })
    expect(() => ctx.codeRuntime.resolve({ code: 1 as never })).toThrow('codeRuntime.run: code must be a string')
    expect(() => ctx.codeRuntime.resolve({ code: '', bindings: { 'not ok': {} } })).toThrow(
      /not a JavaScript identifier/,
    )
    expect(() => ctx.codeRuntime.resolve({ code: '', timeoutMs: -1 })).toThrow(/timeoutMs must be a positive number/)
  })

  it('globals are visible to the program', async () => {
    expect((await run({ code: 'return input.n * 2', globals: { input: { n: 21 } } })).value).toBe(42)
  })

  it('type stripping keeps line numbers', async () => {
    const source = 'const a: string = "x"\ninterface I {\n  y: number\n}\nreturn a as string'
    const out = await stripTypes(source)
    expect(out.split('\n')).toHaveLength(5)
    expect(out.split('\n')[4]).toBe('return a ')
  })

  it('config is validated: timeoutMs above maxTimeoutMs fails the plugin', async () => {
    const bad = new Context()
    await expect(bad.plugin(WorkerThreadCodeRuntime, { timeoutMs: 10, maxTimeoutMs: 5 })).rejects.toThrow(
      /exceeds maxTimeoutMs/,
    )
  })

  it('with a sandbox policy loaded it runs programs only in danger-full-access and refuses the rest (fail closed)', async () => {
    const guarded = new Context()
    await guarded.plugin(SandboxPolicyService, { defaultMode: 'workspace-write' } as never)
    await guarded.plugin(WorkerThreadCodeRuntime, {})
    try {
      const refused = await guarded.codeRuntime.run({ code: 'return 1', sessionId: 'S1' })
      expect(refused.value).toBeUndefined()
      expect(refused.error?.code).toBe('REFUSED')
      expect(refused.error?.message).toMatch(
        /^the program was not run: this runtime runs programs inside the dsh process, unconfined, and the session's sandbox mode is workspace-write\./,
      )
      guarded.sandboxPolicy.setMode('S2', 'danger-full-access')
      expect((await guarded.codeRuntime.run({ code: 'return 2', sessionId: 'S2' })).value).toBe(2)
    } finally {
      await (guarded.fiber as unknown as { dispose(): Promise<void> }).dispose()
    }
  })
})
