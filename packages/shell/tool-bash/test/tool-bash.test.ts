import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { Context } from 'cordis'
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import ToolRegistry, { type ToolResultPayload } from '@dsh/tools'
import LocalSubprocessService from '@dsh/subprocess-local'
import BashLocalExecutor from '@dsh/bash-local'
import ShellEnvRegistry from '@dsh/shell-env'
import { createHarness } from '@dsh/agent-loop-testkit'
import * as ToolBash from '../src/index.ts'

let ctx: Context
let dir: string
let spill: string
let callNo = 0

const bashLocalConfig = () => ({ defaultTimeoutMs: 5_000, maxTimeoutMs: 8_000, killGraceMs: 200, spillDir: spill })

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'dsh-tool-bash-'))
  spill = join(dir, '.spill')
  ctx = new Context()
  await ctx.plugin(ToolRegistry, {} as never)
  await ctx.plugin(LocalSubprocessService, {} as never)
  await ctx.plugin(BashLocalExecutor, bashLocalConfig() as never)
  await ctx.plugin(ShellEnvRegistry, { home: '/srv/dsh' })
  await ctx.plugin(ToolBash, { output: { headBytes: 200, tailBytes: 200 } })
})

afterAll(() => rmSync(dir, { recursive: true, force: true }))

async function call(
  args: unknown,
  options: { cwd?: string; signal?: AbortSignal; sessionId?: string } = {},
): Promise<ToolResultPayload> {
  return ctx.tools.execute(
    { callId: `c${++callNo}`, name: 'bash', arguments: typeof args === 'string' ? args : JSON.stringify(args) },
    { cwd: options.cwd ?? dir, signal: options.signal, sessionId: options.sessionId },
  )
}

function text(result: ToolResultPayload): string {
  return result.message.content.map((block) => (block.type === 'text' ? block.text : '')).join('')
}

describe('tool-bash', () => {
  it('shows merged output and the exit code', async () => {
    const result = await call({ command: 'echo hi; echo oops >&2; exit 2', description: 'test' })
    expect(text(result)).toBe('hi\noops\n[exit code: 2]')
    expect(result.error).toBeUndefined()
    expect(result.meta).toMatchObject({ status: 'exited', exitCode: 2, truncated: false, workdir: dir })
  })

  it('says when there was no output', async () => {
    expect(text(await call({ command: 'true', description: 'nothing' }))).toBe('(no output)\n[exit code: 0]')
  })

  it('truncates long output to head and tail with a marker naming the full-output file', async () => {
    const result = await call({ command: 'seq 1 5000', description: 'count' })
    const body = text(result)
    const whole = Array.from({ length: 5000 }, (_, i) => `${i + 1}\n`).join('')
    expect(body.startsWith('1\n2\n3\n')).toBe(true)
    expect(body).toMatch(/\n4999\n5000\n\[exit code: 0\]$/)
    const marker = /\[\.\.\. (\d+) bytes omitted; the full output \((\d+) bytes\) is in (.+?) \.\.\.\]/.exec(body)
    expect(marker).not.toBeNull()
    expect(Number(marker![2])).toBe(Buffer.byteLength(whole))
    expect(Number(marker![1])).toBe(Buffer.byteLength(whole) - 400)
    expect(readFileSync(marker![3], 'utf8')).toBe(whole)
    expect(result.meta).toMatchObject({ truncated: true, spillPath: marker![3] })
  })

  it('reports a timeout as an error result with code TIMEOUT', async () => {
    const result = await call({ command: 'echo waiting; sleep 30', description: 'slow', timeoutMs: 300 })
    expect(result.error?.code).toBe('TIMEOUT')
    expect(result.message.isError).toBe(true)
    expect(text(result)).toMatch(
      /^waiting\n\[timed out after 300 ms; the command and its child processes were stopped with SIGTERM\]$/,
    )
  })

  it('notes a capped timeout', async () => {
    const result = await call({ command: 'true', description: 'cap', timeoutMs: 999_999 })
    expect(text(result)).toContain('[note: timeout capped at 8000 ms (requested 999999 ms)]')
  })

  it('cancels mid-command through the call signal', async () => {
    const controller = new AbortController()
    const pending = call({ command: 'sleep 30', description: 'cancel me' }, { signal: controller.signal })
    setTimeout(() => controller.abort(), 100)
    const result = await pending
    expect(result.error?.code).toBe('CANCELLED')
  })

  it('resolves a relative workdir against the call cwd, with spaces and unicode', async () => {
    const odd = join(dir, 'spaced dir ☃')
    mkdirSync(odd)
    const result = await call({ command: 'pwd', description: 'where', workdir: 'spaced dir ☃' })
    expect(text(result)).toBe(`${odd}\n[exit code: 0]`)
  })

  it('refuses a nonexistent workdir with a model-visible error', async () => {
    const result = await call({ command: 'pwd', description: 'where', workdir: 'no/such/dir' })
    expect(result.error?.code).toBe('WORKDIR_NOT_FOUND')
    expect(text(result)).toBe(
      `Error [WORKDIR_NOT_FOUND]: working directory does not exist: ${join(dir, 'no/such/dir')}. Pass an existing directory as workdir (a relative path resolves against ${dir}).`,
    )
  })

  it('decodes non-UTF-8 output without failing', async () => {
    const result = await call({ command: `printf 'x\\xff\\xfey\\n'`, description: 'bytes' })
    expect(text(result)).toBe('x\uFFFD\uFFFDy\n[exit code: 0]')
  })

  it('sets the DSH_* variables of ctx.shellEnv and the non-interactive environment', async () => {
    const result = await call(
      { command: 'echo "$DSH_SHELL $DSH_HOME $DSH_SESSION_ID $PAGER $CI"', description: 'env' },
      { sessionId: 'sess-9' },
    )
    expect(text(result)).toBe('1 /srv/dsh sess-9 cat 1\n[exit code: 0]')
  })

  it('turns bad arguments into model-visible errors', async () => {
    expect((await call({ description: 'no command' })).error?.code).toBe('INVALID_ARGUMENTS')
    expect((await call({ command: 'true' })).error?.code).toBe('INVALID_ARGUMENTS')
    expect((await call({ command: '', description: 'empty' })).error?.code).toBe('INVALID_ARGUMENTS')
    expect((await call({ command: 'true', description: 'x', timeoutMs: 'soon' })).error?.code).toBe('INVALID_ARGUMENTS')
    expect((await call({ command: 'true', description: 'x', run_in_background: true })).error?.code).toBe(
      'INVALID_ARGUMENTS',
    )
    expect((await call('{"command": "tru')).error?.code).toBe('INVALID_JSON')
    const blank = await call({ command: '   ', description: 'blank' })
    expect(blank.error?.code).toBe('INVALID_REQUEST')
    expect(text(blank)).toMatch(/^Error \[INVALID_REQUEST\]: command must be a non-empty string/)
  })

  it('describes its timeouts and leaves run_in_background out', () => {
    const schemas = ctx.tools.schemas?.() ?? []
    const bash = (schemas as Array<{ name: string; description: string; parameters: { properties: object } }>).find(
      (t) => t.name === 'bash',
    )
    expect(bash?.description).toContain('5000 ms unless you set timeoutMs (at most 8000 ms)')
    expect(Object.keys(bash?.parameters.properties ?? {})).toEqual(['command', 'description', 'timeoutMs', 'workdir'])
  })

  it('unregisters when the plugin unloads', async () => {
    const local = new Context()
    await local.plugin(ToolRegistry, {} as never)
    await local.plugin(LocalSubprocessService, {} as never)
    await local.plugin(BashLocalExecutor, bashLocalConfig() as never)
    const fiber = local.plugin(ToolBash, {} as never)
    await fiber
    const run = () =>
      local.tools.execute(
        { callId: 'x', name: 'bash', arguments: '{"command":"true","description":"x"}' },
        { cwd: dir },
      )
    expect((await run()).error).toBeUndefined()
    await fiber.dispose()
    expect((await run()).error?.code).toBe('UNKNOWN_TOOL')
  })

  it('runs end to end in an agent turn', async () => {
    const harness = await createHarness({
      cwd: dir,
      script: [
        { toolCalls: [{ name: 'bash', arguments: { command: 'echo hi from bash', description: 'greet' } }] },
        { text: 'done' },
      ],
      plugins: [
        [LocalSubprocessService, {}],
        [BashLocalExecutor, bashLocalConfig()],
        [ToolBash, {}],
      ],
    })
    try {
      await harness.prompt('say hi')
      const results = harness.session.events.filter((event) => event.type === 'tool/result')
      expect(results).toHaveLength(1)
      const payload = results[0].data as ToolResultPayload
      expect(payload.message.content).toEqual([{ type: 'text', text: 'hi from bash\n[exit code: 0]' }])
    } finally {
      await harness.dispose()
    }
  })
})

describe('tool-bash service references', () => {
  it('reads ctx.shell once and ctx.shellEnv again only after it changed', async () => {
    const local = new Context()
    await local.plugin(ToolRegistry, {} as never)
    await local.plugin(LocalSubprocessService, {} as never)
    await local.plugin(BashLocalExecutor, bashLocalConfig() as never)
    const shellEnv = local.plugin(ShellEnvRegistry, { home: '/srv/first' })
    await shellEnv
    await local.plugin(ToolBash, { output: { headBytes: 200, tailBytes: 200 } })
    let shellReads = 0
    local.on('internal/get', (_ctx, name, _error, next) => {
      if (name === 'shell') shellReads++
      return next()
    })
    const reflect = local.reflect as unknown as { get(name: string, strict?: boolean): unknown }
    const get = reflect.get
    let envLookups = 0
    reflect.get = function (name: string, strict?: boolean) {
      if (name === 'shellEnv') envLookups++
      return get.call(this, name, strict)
    }
    const home = async () => {
      const result = await local.tools.execute(
        {
          callId: `h${++callNo}`,
          name: 'bash',
          arguments: JSON.stringify({ command: 'echo "[$DSH_HOME]"', description: 'home' }),
        },
        { cwd: dir },
      )
      return text(result).split('\n')[0]
    }
    expect(await home()).toBe('[/srv/first]')
    expect(await home()).toBe('[/srv/first]')
    expect(shellReads).toBe(0)
    expect(envLookups).toBe(1)
    // Unloaded: its variables are gone at once (no stale registry).
    await shellEnv.dispose()
    expect(await home()).toBe('[]')
    // A new registry is seen at once.
    await local.plugin(ShellEnvRegistry, { home: '/srv/second' })
    expect(await home()).toBe('[/srv/second]')
    expect(envLookups).toBe(3)
  })
})
