// @dsh/tool-run-code: Code Mode's entry tool `run_code` and the generated TypeScript API section.
// A program runs through `ctx.codeRuntime`; each `await tools.x({...})` inside it is one call
// through the registry's full pipeline (origin 'code': approvals, sandbox, guards, spill), logged
// in the session as `tool-run-code/call` and `tool-run-code/result`.
import type { Context } from 'cordis'
import Schema from 'schemastery'
import { formatRunResult, type Binding, type CodeRunResult } from '@dsh/code-runtime'
import type { ToolCallContext, ToolDefinition, ToolResultPayload } from '@dsh/tools'
import { toolError as fail } from '@dsh/tools'
import type {} from '@dsh/session-persistence'
import type {} from '@dsh/system-prompt'
import { CallGate } from './lock.ts'
import { callExpression, renderDeclarations, renderTool, type SdkTool } from './sdk.ts'

export { callExpression, memberName, renderDeclarations, renderTool, schemaType, type SdkTool } from './sdk.ts'

export const RUN_CODE_EVENT_TYPES = ['tool-run-code/call', 'tool-run-code/result'] as const

declare module '@dsh/session' {
  interface SessionEventMap {
    /** A program (run by the `run_code` call `parentCallId`) called a tool. `arguments` is the JSON it passed. */
    'tool-run-code/call': { parentCallId: string; callId: string; name: string; arguments: string }
    /** That call's result, exactly as the pipeline produced it (what the program received, or the error it saw). */
    'tool-run-code/result': { parentCallId: string; callId: string; name: string; result: ToolResultPayload }
  }
}

export interface ToolRunCodeConfig {
  timeoutMs: number
  maxTimeoutMs: number
  maxCalls: number
  maxOutputChars: number
}

export const Config: Schema<Partial<ToolRunCodeConfig>, ToolRunCodeConfig> = Schema.object({
  timeoutMs: Schema.natural()
    .min(1)
    .default(120_000)
    .description('Time budget of a program that names none, in ms (the runtime caps it).'),
  maxTimeoutMs: Schema.natural()
    .min(1)
    .default(600_000)
    .description('Largest time budget a program may ask for with timeout_ms, in ms (the runtime caps it too).'),
  maxCalls: Schema.natural().min(1).default(500).description('Most tool calls one program may make.'),
  maxOutputChars: Schema.natural()
    .min(200)
    .default(40_000)
    .description('Longest result text shown to the model; the middle is cut beyond it.'),
})

export const name = 'tool-run-code'
export const inject = ['tools', 'codeRuntime', 'sessions']

export const TOOL_NAME = 'run_code'
export const SECTION_ID = 'code-mode'
export const SDK_VARIABLE = 'codeModeSdk'

const INTRO = [
  'Code Mode: `run_code` runs a TypeScript program (the body of an async function) in a fresh process, confined like bash.',
  'Inside the program every tool listed below is an async function of the `tools` object. Each call goes through',
  "the same checks as a direct tool call (approvals, sandbox, guards) and resolves with the tool's text output;",
  'a failed call throws an Error whose `code` names the failure (catch it to carry on). `console.log` notes what',
  'you want to see; `return` a JSON value as the result. Do loops, filtering and combining inside one program',
  'instead of many separate calls; run independent calls together with `Promise.all`. No `import`: use `tools`.',
].join('\n')

/** The prompt text for a set of program-callable tools under `mode`. Empty in native mode. */
export function sdkSection(
  tools: readonly SdkTool[],
  mode: 'native' | 'code' | 'both',
  render: (tool: SdkTool) => string = renderTool,
): string {
  if (mode === 'native') return ''
  const direct =
    mode === 'both'
      ? '\nThe same tools can also be called directly; prefer `run_code` when a task needs several calls.'
      : ''
  return `${INTRO}${direct}\n\n\`\`\`ts\n${renderDeclarations(tools, render)}\n\`\`\``
}

const textOf = (result: ToolResultPayload) =>
  result.message.content.map((block) => (block.type === 'text' ? block.text : `[${block.type} omitted]`)).join('')

export function apply(ctx: Context, config: ToolRunCodeConfig): void {
  if (config.timeoutMs > config.maxTimeoutMs)
    throw new TypeError(`tool-run-code: timeoutMs (${config.timeoutMs}) exceeds maxTimeoutMs (${config.maxTimeoutMs})`)
  ctx.inject(['sessionPersistence'], (inner) => {
    for (const type of RUN_CODE_EVENT_TYPES) inner.sessionPersistence.registerEventType(type)
  })

  // Each tool's declaration is rendered once per definition object (they are immutable once registered).
  const rendered = new WeakMap<ToolDefinition, string>()
  const declare = (def: ToolDefinition) => {
    let text = rendered.get(def)
    if (text === undefined) rendered.set(def, (text = renderTool(def)))
    return text
  }
  ctx.inject(['systemPrompt'], (inner) => {
    inner.systemPrompt.registerVariable(SDK_VARIABLE, (input) => {
      const mode = ctx.tools.presentAs(input.scope)
      if (mode === 'native') return ''
      const defs = ctx.tools.programTools(input.scope)
      return sdkSection(defs, mode, (tool) => declare(tool as ToolDefinition))
    })
    inner.systemPrompt.registerSection({ id: SECTION_ID, order: 150, stable: true, text: `{{${SDK_VARIABLE}}}` })
  })

  ctx.tools.register<{ code: string; timeout_ms?: number }>({
    name: TOOL_NAME,
    codeEntry: true,
    description:
      'Run a TypeScript program that calls your tools as async functions (`await tools.read({...})`); see the Code Mode ' +
      'API in the system prompt. The program is the body of an async function: `return` a JSON value as its result, use ' +
      '`console.log` for notes. You get the console output and the returned value, or the error with its stack.',
    parameters: {
      type: 'object',
      properties: {
        code: { type: 'string', description: 'The program (TypeScript or JavaScript), the body of an async function.' },
        timeout_ms: {
          type: 'integer',
          minimum: 1,
          description: `Time budget in ms (default ${config.timeoutMs}, at most ${config.maxTimeoutMs}).`,
        },
      },
      required: ['code'],
      additionalProperties: false,
    },
    async execute(args, call) {
      if (args.code.trim() === '') return fail('EMPTY_PROGRAM', 'the program is empty; pass the code to run in `code`.')
      const run = new ProgramCalls(ctx, call, config.maxCalls)
      let result: CodeRunResult
      try {
        result = await ctx.codeRuntime.run({
          code: args.code,
          language: 'typescript',
          bindings: { tools: run.bindings() },
          timeoutMs: Math.min(args.timeout_ms ?? config.timeoutMs, config.maxTimeoutMs),
          signal: call.signal,
          // The runtime confines the program by this session's sandbox policy, in the call's cwd.
          ...(call.sessionId !== undefined ? { sessionId: call.sessionId } : {}),
          cwd: call.cwd,
        })
      } catch (error) {
        return fail(
          'RUNTIME_FAILED',
          `the program could not be run: ${error instanceof Error ? error.message : String(error)}`,
        )
      }
      const meta = { calls: run.count, durationMs: result.durationMs, logLines: result.logs.length }
      const text = formatRunResult(result, { maxChars: config.maxOutputChars })
      if (result.error) {
        const code = `PROGRAM_${result.error.code}`
        const what = result.error.code === 'REFUSED' ? 'the program was not run' : 'the program did not finish'
        return {
          content: `Error [${code}]: ${what}.\n\n${text}`,
          isError: true,
          error: { code, message: result.error.message },
          meta,
        }
      }
      return { content: text, meta }
    },
  })
}

/** The tool calls of one program: bindings, numbering, logging, ordering and the call cap. */
class ProgramCalls {
  count = 0
  private readonly gate = new CallGate()

  constructor(
    private readonly ctx: Context,
    private readonly call: ToolCallContext,
    private readonly maxCalls: number,
  ) {}

  bindings(): Record<string, Binding> {
    const table: Record<string, Binding> = {}
    for (const def of this.ctx.tools.programTools(this.call.scope))
      table[def.name] = (arg, { signal }) => this.invoke(def, arg, signal)
    return table
  }

  private log<K extends (typeof RUN_CODE_EVENT_TYPES)[number]>(
    type: K,
    data: import('@dsh/session').SessionEventMap[K],
  ): void {
    const session = this.call.sessionId !== undefined ? this.ctx.sessions.get(this.call.sessionId) : undefined
    if (!session) return
    try {
      session.append(type, data)
    } catch (error) {
      // The event is logged before listeners run; a failing listener is reported, not fatal here.
      this.ctx.logger('tool-run-code').warn('%s', error instanceof Error ? error.message : String(error))
    }
  }

  private async invoke(def: ToolDefinition, arg: unknown, signal: AbortSignal): Promise<string> {
    if (this.count >= this.maxCalls) {
      throw Object.assign(
        new Error(
          `this program already made ${this.maxCalls} tool calls, the most one program may make; return what you have`,
        ),
        { code: 'TOO_MANY_CALLS' },
      )
    }
    const index = ++this.count
    const parentCallId = this.call.callId
    const callId = `${parentCallId}.${index}`
    let argumentsJson: string
    try {
      argumentsJson = JSON.stringify(arg === undefined ? {} : arg)
    } catch (error) {
      throw Object.assign(
        new TypeError(`${callExpression('tools', def.name)}: the arguments are not JSON (${(error as Error).message})`),
        { code: 'INVALID_JSON' },
      )
    }
    this.log('tool-run-code/call', { parentCallId, callId, name: def.name, arguments: argumentsJson })
    const safe =
      typeof def.concurrencySafe === 'function'
        ? safely(() => (def.concurrencySafe as (a: unknown) => boolean)(arg))
        : def.concurrencySafe === true
    const release = await this.gate.enter(!safe)
    let result: ToolResultPayload
    try {
      const { call } = this
      result = await this.ctx.tools.execute(
        { callId, name: def.name, arguments: argumentsJson },
        {
          cwd: call.cwd,
          ...(call.sessionId !== undefined ? { sessionId: call.sessionId } : {}),
          ...(call.agentId !== undefined ? { agentId: call.agentId } : {}),
          ...(call.scope !== undefined ? { scope: call.scope } : {}),
          ...(call.turn !== undefined ? { turn: call.turn } : {}),
          ...(call.step !== undefined ? { step: call.step } : {}),
          signal: AbortSignal.any([call.signal, signal]),
          origin: 'code',
          parentCallId,
        },
      )
    } finally {
      release()
    }
    this.log('tool-run-code/result', { parentCallId, callId, name: def.name, result })
    const text = textOf(result)
    if (result.message.isError) throw Object.assign(new Error(text), { code: result.error?.code ?? 'TOOL_ERROR' })
    return text
  }
}

function safely(check: () => boolean): boolean {
  try {
    return check() === true
  } catch {
    return false
  }
}
