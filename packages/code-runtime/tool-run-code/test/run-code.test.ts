// run_code on the real agent loop with the real worker-thread runtime: presentation per mode,
// a program that reads, greps and writes through the pipeline (with an approval inside it), the
// time limit, a throwing program, cancellation, and the per-call session events.
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs'
import { readFile, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Context } from 'cordis'
import { afterEach, describe, expect, it } from 'vitest'
import { createHarness, type Harness, type ScriptEntry } from '@dsh/agent-loop-testkit'
import type { LlmRequest } from '@dsh/llm'
import type { ToolMode } from '@dsh/tools'
import WorkerThreadCodeRuntime from '@dsh/code-runtime-worker-thread'
import ApprovalService, { type ApprovalRequest } from '@dsh/user-approval'
import * as ToolRunCode from '../src/index.ts'

let harness: Harness | undefined
afterEach(async () => {
  await harness?.dispose()
  harness = undefined
})

/** Three small real tools over a temp directory, and a gate that asks ctx.approval before `write`. */
function workspaceTools(cwd: string) {
  return {
    name: 'test-workspace-tools',
    inject: ['tools', 'approval'],
    apply(ctx: Context) {
      ctx.tools.register<{ path: string }>({
        name: 'read',
        description: 'Read a text file.',
        parameters: {
          type: 'object',
          properties: { path: { type: 'string', description: 'Relative path.' } },
          required: ['path'],
          additionalProperties: false,
        },
        concurrencySafe: true,
        execute: async (args) => ({ content: await readFile(join(cwd, args.path), 'utf8') }),
      })
      ctx.tools.register<{ pattern: string; text: string }>({
        name: 'grep',
        description: 'Lines of `text` matching a regular expression.',
        parameters: {
          type: 'object',
          properties: { pattern: { type: 'string' }, text: { type: 'string' } },
          required: ['pattern', 'text'],
        },
        concurrencySafe: true,
        execute: (args) => ({
          content: args.text
            .split('\n')
            .filter((line) => new RegExp(args.pattern).test(line))
            .join('\n'),
        }),
      })
      ctx.tools.register<{ path: string; content: string }>({
        name: 'write',
        description: 'Write a file.',
        parameters: {
          type: 'object',
          properties: {
            path: { type: 'string' },
            content: { type: 'string' },
            mode: { enum: ['create', 'overwrite'] },
          },
          required: ['path', 'content'],
        },
        execute: async (args) => {
          await writeFile(join(cwd, args.path), args.content)
          return { content: `wrote ${args.content.length} characters to ${args.path}` }
        },
      })
      ctx.on('tools/pre-execute', async (payload, next) => {
        if (payload.tool.name !== 'write') return next()
        const outcome = await ctx.approval.request(
          {
            sessionId: payload.context.sessionId,
            kind: 'tool',
            title: `write ${(payload.args as { path: string }).path}`,
            action: payload.args as never,
          },
          { signal: payload.context.signal },
        )
        if (outcome.decision !== 'allowed-once' && outcome.decision !== 'allowed-always') {
          payload.decision = { deny: `approval ${outcome.decision}`, code: 'APPROVAL_REJECTED' }
          return
        }
        return next()
      })
    },
  }
}

interface Boot {
  script: ScriptEntry[]
  /** Leave ToolRunCode out of the boot (the test mounts it). */
  without?: boolean
  mode?: ToolMode
  answer?: 'allowed-once' | 'rejected'
  config?: Partial<ToolRunCode.ToolRunCodeConfig>
}

async function boot({ script, mode = 'code', answer = 'allowed-once', config = {}, without = false }: Boot) {
  const cwd = mkdtempSync(join(tmpdir(), 'dsh-run-code-'))
  const asked: ApprovalRequest[] = []
  const h = await createHarness({
    cwd,
    script,
    plugins: [
      [WorkerThreadCodeRuntime, { timeoutMs: 10_000 }],
      [ApprovalService, {}],
      [
        {
          name: 'test-answerer',
          inject: ['approval'],
          apply(ctx: Context) {
            ctx.approval.registerAnswerer({
              name: 'test',
              answer: async (req) => (asked.push(req), { decision: answer }),
            })
          },
        },
      ],
      [workspaceTools(cwd)],
      ...(without ? [] : [[ToolRunCode, config] as [typeof ToolRunCode, unknown]]),
    ],
  })
  if (mode !== 'native') h.ctx.tools.setPresentAs(h.agent.scope!, mode)
  harness = h
  return { h, cwd, asked }
}

const runCode = (code: string, extra: object = {}, callId = 'c1') => ({
  toolCalls: [{ name: 'run_code', arguments: { code, ...extra }, callId }],
})
const toolText = (request: LlmRequest, callId: string) => {
  const message = request.messages.find((m) => m.role === 'tool' && m.callId === callId)
  return message && message.role === 'tool'
    ? message.content.map((b) => (b.type === 'text' ? b.text : '')).join('')
    : undefined
}

const SUMMARY_PROGRAM = [
  'const [a, b] = await Promise.all([tools.read({ path: "a.txt" }), tools.read({ path: "b.txt" })])',
  'const hits: string = await tools.grep({ pattern: "TODO", text: a + "\\n" + b })',
  'const count = hits.split("\\n").filter(Boolean).length',
  'console.log(`found ${count} TODO lines`)',
  'await tools.write({ path: "summary.md", content: `# TODOs\\n${hits}\\n` })',
  'return { count }',
].join('\n')

describe('tool-run-code', () => {
  it('in code mode the model sees only run_code plus the generated API; direct calls to other tools are unknown', async () => {
    const { h } = await boot({
      script: [{ toolCalls: [{ name: 'read', arguments: { path: 'a.txt' }, callId: 'd1' }] }, { text: 'ok' }],
    })
    await h.prompt('go')
    const first = h.model.requests[0]
    expect(first.tools?.map((t) => t.name)).toEqual(['run_code'])
    expect(first.system).toContain('Code Mode: `run_code` runs a TypeScript program')
    expect(first.system).toContain(
      [
        '  /** Read a text file. */',
        '  read(args: {',
        '    /** Relative path. */',
        '    path: string',
        '  }): Promise<string>',
      ].join('\n'),
    )
    expect(first.system).toContain('mode?: "create" | "overwrite"')
    expect(first.system).not.toMatch(/run_code\(args/)
    expect(toolText(h.model.requests[1], 'd1')).toBe(
      'Error [UNKNOWN_TOOL]: there is no tool named "read". Available tools: run_code. Use one of these exact names.',
    )
  })

  it('native mode offers every tool but run_code and no API section; both offers everything', async () => {
    const { h } = await boot({ mode: 'native', script: [{ text: 'one' }] })
    await h.prompt('go')
    expect(h.model.requests[0].tools?.map((t) => t.name)).toEqual(['grep', 'read', 'write'])
    expect(h.model.requests[0].system).not.toContain('Code Mode')
    await h.dispose()
    const both = await boot({ mode: 'both', script: [{ text: 'one' }] })
    await both.h.prompt('go')
    expect(both.h.model.requests[0].tools?.map((t) => t.name)).toEqual(['grep', 'read', 'run_code', 'write'])
    expect(both.h.model.requests[0].system).toContain('The same tools can also be called directly')
  })

  it('a program reads two files, greps, and writes a summary, with an approval inside it; every sub-call is logged', async () => {
    const { h, cwd, asked } = await boot({ script: [runCode(SUMMARY_PROGRAM), { text: 'done' }] })
    writeFileSync(join(cwd, 'a.txt'), 'one\nTODO: fix a\nthree\n')
    writeFileSync(join(cwd, 'b.txt'), 'TODO: fix b\nok\n')
    const origins: Array<[string, string | undefined, string | undefined]> = []
    h.ctx.on(
      'tools/pre-execute',
      (payload, next) => (
        origins.push([payload.tool.name, payload.context.origin, payload.context.parentCallId]), next()
      ),
      { prepend: true },
    )
    const result = await h.prompt('summarise the TODOs')
    expect(result.reason).toBe('completed')
    expect(readFileSync(join(cwd, 'summary.md'), 'utf8')).toBe('# TODOs\nTODO: fix a\nTODO: fix b\n')
    expect(asked.map((r) => r.title)).toEqual(['write summary.md'])
    expect(toolText(h.model.requests[1], 'c1')).toBe(
      'Console output:\nfound 2 TODO lines\n\nReturn value:\n{\n  "count": 2\n}',
    )
    expect(origins.filter(([name]) => name !== 'run_code')).toEqual([
      ['read', 'code', 'c1'],
      ['read', 'code', 'c1'],
      ['grep', 'code', 'c1'],
      ['write', 'code', 'c1'],
    ])
    const calls = h.session.events
      .filter((e) => e.type === 'tool-run-code/call')
      .map((e) => e.data as { callId: string; name: string; parentCallId: string })
    expect(calls.map((c) => [c.callId, c.name, c.parentCallId])).toEqual([
      ['c1.1', 'read', 'c1'],
      ['c1.2', 'read', 'c1'],
      ['c1.3', 'grep', 'c1'],
      ['c1.4', 'write', 'c1'],
    ])
    const results = h.session.events
      .filter((e) => e.type === 'tool-run-code/result')
      .map((e) => e.data as ToolRunCodeResult)
    expect(results.map((r) => r.callId).sort()).toEqual(['c1.1', 'c1.2', 'c1.3', 'c1.4'])
    expect(results.find((r) => r.callId === 'c1.4')!.result.message.content).toEqual([
      { type: 'text', text: 'wrote 32 characters to summary.md' },
    ])
    // Sub-calls are not model messages: the history holds one call and one result.
    expect(
      h.model.requests[1].messages.filter((m) => m.role === 'tool').map((m) => (m.role === 'tool' ? m.callId : '')),
    ).toEqual(['c1'])
  })

  it('a rejected approval inside a program throws the denial at the call; the program can catch it', async () => {
    const program =
      'try { await tools.write({ path: "x.txt", content: "x" }) } catch (e) { return { code: e.code, message: e.message } }'
    const { h, cwd } = await boot({ answer: 'rejected', script: [runCode(program), { text: 'done' }] })
    await h.prompt('go')
    const text = toolText(h.model.requests[1], 'c1')!
    expect(text).toContain('"code": "APPROVAL_REJECTED"')
    expect(text).toContain('the call to tool \\"write\\" was not run: approval rejected')
    expect(() => readFileSync(join(cwd, 'x.txt'))).toThrow()
  })

  it('an infinite loop is killed by the time limit and the turn goes on', async () => {
    const { h } = await boot({
      script: [runCode('let i = 0\nwhile (true) i++', { timeout_ms: 300 }), { text: 'recovered' }],
    })
    const result = await h.prompt('loop')
    expect(result).toMatchObject({ reason: 'completed', text: 'recovered' })
    const text = toolText(h.model.requests[1], 'c1')!
    expect(text).toBe(
      'Error [PROGRAM_TIMEOUT]: the program did not finish.\n\nProgram failed (TIMEOUT): the program ran longer than its 300 ms limit and was stopped',
    )
  })

  it('timeout_ms is capped at maxTimeoutMs; a default above the cap is a config error', async () => {
    const { h } = await boot({
      config: { timeoutMs: 300, maxTimeoutMs: 300 },
      script: [runCode('while (true) {}', { timeout_ms: 600_000 }), { text: 'capped' }],
    })
    await h.prompt('loop')
    expect(toolText(h.model.requests[1], 'c1')).toBe(
      'Error [PROGRAM_TIMEOUT]: the program did not finish.\n\nProgram failed (TIMEOUT): the program ran longer than its 300 ms limit and was stopped',
    )
    await expect(h.mount(ToolRunCode, { timeoutMs: 1000, maxTimeoutMs: 500 })).rejects.toThrow(
      'tool-run-code: timeoutMs (1000) exceeds maxTimeoutMs (500)',
    )
  })

  it('a program that throws shows the stack of its own code, with the console output before it', async () => {
    const program = [
      'console.log("before")',
      'function parse(text: string): number {',
      '  if (!/^\\d+$/.test(text)) throw new SyntaxError(`not a number: ${text}`)',
      '  return Number(text)',
      '}',
      'return parse("x1")',
    ].join('\n')
    const { h } = await boot({ script: [runCode(program), { text: 'saw it' }] })
    await h.prompt('go')
    expect(toolText(h.model.requests[1], 'c1')).toBe(
      [
        'Error [PROGRAM_THROWN]: the program did not finish.',
        '',
        'Console output:',
        'before',
        '',
        'Program failed (THROWN): SyntaxError: not a number: x1',
        '    at parse (program.ts:3:34)',
        '    at program.ts:6:8',
      ].join('\n'),
    )
    const result = h.session.events.filter((e) => e.type === 'tool/result').at(-1)!.data as { error?: { code: string } }
    expect(result.error?.code).toBe('PROGRAM_THROWN')
  })

  it('a program cannot call run_code, and an unknown tool name fails with the list of tools', async () => {
    const program =
      'const out: string[] = []\nfor (const f of [() => tools.run_code({ code: "1" }), () => tools.reed({})]) { try { await f() } catch (e) { out.push(e.message) } }\nreturn out'
    const { h } = await boot({ script: [runCode(program), { text: 'ok' }] })
    await h.prompt('go')
    const text = toolText(h.model.requests[1], 'c1')!
    expect(text).toContain('tools.run_code does not exist. Available: grep, read, write')
    expect(text).toContain('tools.reed does not exist. Available: grep, read, write')
  })

  it('cancelling the turn stops the program and its pending tool call', async () => {
    const { h } = await boot({ script: [runCode('await tools.slow({})\nwhile (true) {}'), { text: 'unused' }] })
    let bodySignal: AbortSignal | undefined
    h.ctx.tools.register({
      name: 'slow',
      description: 'never ends',
      parameters: { type: 'object', properties: {} },
      execute: (_args, call) => new Promise(() => void (bodySignal = call.signal)),
    })
    h.ctx.on('tools/pre-execute', (payload, next) => {
      if (payload.tool.name === 'slow') setTimeout(() => h.agent.abort(), 50)
      return next()
    })
    const result = await h.prompt('go')
    expect(result.reason).toBe('cancelled')
    const logged = h.session.events.filter((e) => e.type === 'tool/result').at(-1)!.data as { error?: { code: string } }
    expect(logged.error?.code).toMatch(/CANCELLED/)
    expect(bodySignal?.aborted).toBe(true)
  })

  it('bad arguments: an empty program is refused with a clear error; the call cap holds', async () => {
    const { h } = await boot({
      config: { maxCalls: 2 },
      script: [
        runCode('   '),
        runCode('for (let i = 0; i < 5; i++) await tools.grep({ pattern: "a", text: "a" })', {}, 'c2'),
        { text: 'ok' },
      ],
    })
    writeFileSync(join(h.agent.cwd, 'a.txt'), 'x')
    await h.prompt('go')
    expect(toolText(h.model.requests[1], 'c1')).toBe(
      'Error [EMPTY_PROGRAM]: the program is empty; pass the code to run in `code`.',
    )
    const capped = toolText(h.model.requests[2], 'c2')!
    expect(capped).toContain('Error [PROGRAM_THROWN]')
    expect(capped).toContain('already made 2 tool calls')
  })

  it('unloading the plugin removes run_code and the API section', async () => {
    const { h } = await boot({ without: true, script: [{ text: 'one' }, { text: 'two' }] })
    const mounted = await h.mount(ToolRunCode, {})
    await h.prompt('first')
    expect(h.model.requests[0].system).toContain('declare const tools')
    expect(h.model.requests[0].tools?.map((t) => t.name)).toEqual(['run_code'])
    await mounted.dispose()
    await h.prompt('second')
    expect(h.model.requests[1].system).not.toContain('Code Mode')
    expect(h.model.requests[1].tools ?? []).toEqual([])
  })
})

type ToolRunCodeResult = { callId: string; result: { message: { content: unknown } } }
