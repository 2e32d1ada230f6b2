// @dsh/tool-workflow: the model-facing `workflow` tool. It owns the tool schema, the result the
// parent sees, and the run lifecycle in the session log (`tool-workflow/*` events) over
// `ctx.workflowEngine`; running the script, the caps and cancellation live behind that seam.
import type { Context } from 'cordis'
import Schema from 'schemastery'
import type { Agent } from '@dsh/agent'
import type { Session } from '@dsh/session'
import type { ToolCallContext, ToolOutput } from '@dsh/tools'
import { toolError as fail } from '@dsh/tools'
import type { JsonValue, WorkflowLimits, WorkflowRunResult } from '@dsh/workflow'
import type {} from '@dsh/session-persistence'
import { WORKFLOW_EVENT_TYPES, nextRunId } from './runs.ts'

export {
  WORKFLOW_EVENT_TYPES,
  nextRunId,
  workflowRuns,
  type WorkflowChildRecord,
  type WorkflowRunRecord,
  type WorkflowRunStatus,
} from './runs.ts'

export interface ToolWorkflowConfig {
  maxAnswerChars: number
  maxScriptChars: number
}

export const Config: Schema<Partial<ToolWorkflowConfig>, ToolWorkflowConfig> = Schema.object({
  maxAnswerChars: Schema.natural()
    .min(100)
    .default(2_000)
    .description('Characters of each child answer shown in the result (the value the script returns is shown whole).'),
  maxScriptChars: Schema.natural().min(100).default(50_000).description('Longest script accepted.'),
})

export const name = 'tool-workflow'
export const inject = ['tools', 'workflowEngine', 'agents', 'sessions']

/** Run ids of runs in progress in this process (a logged run not in here and never finished was interrupted). */
export const liveRuns = new Set<string>()

export interface LoggedRunOptions {
  parent: Agent
  session: Session
  /** The tool that started the run, as logged (`workflow`, `ralph`). */
  tool: string
  description: string
  script: string
  input?: JsonValue
  callId?: string
  limits?: Partial<WorkflowLimits>
  signal?: AbortSignal
}

/**
 * Runs a script through `ctx.workflowEngine` and logs it in `session`: `tool-workflow/started`,
 * one `child-started`/`child-finished` pair per child, and `tool-workflow/finished` (always, also
 * when the engine fails). For this tool and for tools that run a fixed workflow (`ralph`).
 */
export async function runLoggedWorkflow(
  ctx: Context,
  options: LoggedRunOptions,
): Promise<{ runId: string; result: WorkflowRunResult }> {
  const { session } = options
  const runId = nextRunId(session)
  const limits = ctx.workflowEngine.resolveLimits(options.limits)
  const append: Session['append'] = (type, data) => {
    try {
      return session.append(type, data)
    } catch (error) {
      // Logged before listeners run: a failing listener is reported, never fatal to the run.
      ctx.logger('tool-workflow').warn('%s', error instanceof Error ? error.message : String(error))
      return undefined as never
    }
  }
  append('tool-workflow/started', {
    runId,
    ...(options.callId !== undefined ? { callId: options.callId } : {}),
    tool: options.tool,
    description: options.description,
    script: options.script,
    ...(options.input !== undefined ? { input: options.input } : {}),
    limits,
  })
  liveRuns.add(runId)
  let result: WorkflowRunResult
  try {
    result = await ctx.workflowEngine.run({
      parent: options.parent,
      script: options.script,
      ...(options.input !== undefined ? { input: options.input } : {}),
      ...(options.callId !== undefined ? { callId: options.callId } : {}),
      limits,
      ...(options.signal ? { signal: options.signal } : {}),
      onEvent(event) {
        if (event.type === 'child-started') {
          const { type: _, ...child } = event
          append('tool-workflow/child-started', { runId, ...child })
        } else if (event.type === 'child-finished')
          append('tool-workflow/child-finished', { runId, child: event.child })
      },
    })
  } catch (error) {
    result = {
      status: 'failed',
      error: {
        code: 'INTERNAL',
        message: `the workflow engine failed: ${error instanceof Error ? error.message : String(error)}`,
      },
      logs: [],
      children: [],
      limits,
      durationMs: 0,
    }
  } finally {
    liveRuns.delete(runId)
  }
  append('tool-workflow/finished', {
    runId,
    status: result.status,
    ...(result.value !== undefined ? { value: result.value } : {}),
    ...(result.error ? { error: result.error } : {}),
    logs: result.logs,
    durationMs: result.durationMs,
  })
  return { runId, result }
}

const cut = (text: string, max: number) =>
  text.length > max ? `${text.slice(0, max)} [... ${text.length - max} more characters]` : text

/** The parent-facing text of a run: headline, children, console, value or error. */
export function describeRun(runId: string, result: WorkflowRunResult, maxAnswerChars: number): string {
  const counts = ['completed', 'failed', 'cancelled']
    .map((s) => [s, result.children.filter((c) => c.status === s).length] as const)
    .filter(([, n]) => n > 0)
  const tally = counts.length ? ` (${counts.map(([s, n]) => `${n} ${s}`).join(', ')})` : ''
  const parts = [
    `Workflow ${runId} ${result.status} after ${(result.durationMs / 1000).toFixed(1)} s; ${result.children.length} child${result.children.length === 1 ? '' : 'ren'}${tally}.`,
  ]
  if (result.children.length > 0) {
    parts.push(
      'Children:\n' +
        result.children
          .map(
            (c) =>
              `- ${c.id} "${c.description}": ${c.status}${c.error ? ` [${c.error.code}] ${c.error.message}` : ''}${c.text ? `\n  ${cut(c.text, maxAnswerChars).replace(/\n/g, '\n  ')}` : ''}`,
          )
          .join('\n'),
    )
  }
  if (result.logs.length > 0)
    parts.push(
      `Console output:\n${result.logs.map((l) => (l.level === 'log' || l.level === 'info' ? l.text : `[${l.level}] ${l.text}`)).join('\n')}`,
    )
  if (result.error)
    parts.push(
      `Script failed (${result.error.code}): ${result.error.message}${result.error.stack ? `\n${result.error.stack}` : ''}`,
    )
  else if (result.value !== undefined)
    parts.push(
      `Return value:\n${typeof result.value === 'string' ? result.value : JSON.stringify(result.value, null, 2)}`,
    )
  else parts.push('The script returned nothing.')
  return parts.join('\n\n')
}

/** `30 min`, `90 s`: a run's time budget as the model reads it. */
export function formatDuration(ms: number): string {
  if (ms >= 120_000) return `${Math.round(ms / 60_000)} min`
  return `${Math.round(ms / 1000)} s`
}

/** The parent agent and session of a call, or the error result to return. */
export function callOwner(ctx: Context, call: ToolCallContext): { parent: Agent; session: Session } | ToolOutput {
  const parent = call.agentId !== undefined ? ctx.agents.get(call.agentId) : undefined
  if (!parent) return fail('NO_AGENT', 'this call is not attached to an agent, so it cannot start child agents.')
  return { parent, session: parent.session }
}

export const DESCRIPTION = [
  'Run a JavaScript orchestration script that starts child agents and returns a value. The script is the body of an',
  'async function. `await agents.spawn({ prompt, description? })` starts a fresh child agent with that complete task',
  'and resolves when it ends with `{ id, status: "completed" | "failed" | "cancelled", text, error? }` (it does not',
  'throw when a child fails: check `status`). Start children in parallel with `Promise.all`; a run has limits on',
  'children, parallelism and time (extra spawns wait for a free slot). `input` holds the input you pass, `console.log`',
  'is shown to you, `return` a JSON value as the result. Use it for work that splits into independent parts; children',
  'share your workspace, so give parallel children non-overlapping files. `world` (optional, as on the subagent tool)',
  'runs a child in another world where this run has one, e.g. "e2b": a remote sandbox of its own with a fresh copy',
  'of the workspace.',
].join(' ')

export function apply(ctx: Context, config: ToolWorkflowConfig): void {
  ctx.inject(['sessionPersistence'], (inner) => {
    for (const type of WORKFLOW_EVENT_TYPES) inner.sessionPersistence.registerEventType(type)
  })
  const limits = ctx.workflowEngine.resolveLimits()
  ctx.tools.register<{ script: string; description?: string; input?: JsonValue }>({
    name: 'workflow',
    description: `${DESCRIPTION} Limits of one run: ${limits.maxChildren} children, ${limits.maxConcurrent} at once, ${formatDuration(limits.timeoutMs)}.`,
    parameters: {
      type: 'object',
      properties: {
        script: {
          type: 'string',
          description: 'The orchestration script (JavaScript, the body of an async function).',
        },
        description: { type: 'string', description: 'A few words naming what the run does.' },
        input: { description: 'Any JSON value, visible to the script as `input`.' },
      },
      required: ['script'],
      additionalProperties: false,
    },
    async execute(args, call) {
      if (args.script.trim() === '')
        return fail('EMPTY_SCRIPT', 'the script is empty; pass the orchestration code in `script`.')
      if (args.script.length > config.maxScriptChars)
        return fail(
          'SCRIPT_TOO_LONG',
          `the script has ${args.script.length} characters; at most ${config.maxScriptChars} are accepted.`,
        )
      const owner = callOwner(ctx, call)
      if ('content' in owner) return owner
      const { runId, result } = await runLoggedWorkflow(ctx, {
        ...owner,
        tool: 'workflow',
        description: args.description?.trim() || 'workflow',
        script: args.script,
        ...(args.input !== undefined ? { input: args.input } : {}),
        callId: call.callId,
        signal: call.signal,
      })
      const text = describeRun(runId, result, config.maxAnswerChars)
      const meta = { runId, children: result.children.length, status: result.status }
      if (result.status === 'completed') return { content: text, meta }
      const code = `WORKFLOW_${result.error?.code ?? 'FAILED'}`
      return {
        content: `Error [${code}]: the workflow did not complete.\n\n${text}`,
        isError: true,
        error: { code, message: result.error?.message ?? result.status },
        meta,
      }
    },
  })
}
