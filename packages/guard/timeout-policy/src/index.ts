// @dsh/timeout-policy: one `tools/execute` around-dispatch listener that gives each call a
// cooperative deadline. When the deadline wins it aborts the per-call signal (the tool body sees
// `call.signal` abort) and answers a structured TOOL_TIMEOUT result instead of the call's own.
import type { Context } from 'cordis'
import Schema from 'schemastery'
import type { ExecutePayload, ToolDefinition, ToolOutput } from '@dsh/tools'

export interface TimeoutPolicyConfig {
  /** Budget for tools that declare no `timeoutMs`; 0 means no deadline. */
  defaultMs: number
  /** Per-tool budgets; they take precedence over the tool's declaration. 0 disables the deadline. */
  perTool: Record<string, number>
}

export const Config: Schema<Partial<TimeoutPolicyConfig>, TimeoutPolicyConfig> = Schema.object({
  defaultMs: Schema.natural().default(0).description('Deadline in ms for tools that declare no timeoutMs (0: none).'),
  perTool: Schema.dict(Schema.natural())
    .default({})
    .description("Deadline in ms per tool name, overriding the tool's own timeoutMs (0: none)."),
})

export const name = 'timeout-policy'
export const inject = ['tools']

export const TOOL_TIMEOUT = 'TOOL_TIMEOUT'

/** The budget in ms for one tool, or 0 for none: config per-tool, then the tool's declaration, then the default. */
export function budgetFor(tool: Pick<ToolDefinition, 'name' | 'timeoutMs'>, config: TimeoutPolicyConfig): number {
  const own = config.perTool[tool.name]
  if (own !== undefined) return own
  if (typeof tool.timeoutMs === 'number' && Number.isFinite(tool.timeoutMs) && tool.timeoutMs > 0) return tool.timeoutMs
  return config.defaultMs
}

export function formatDuration(ms: number): string {
  if (ms < 1000) return `${ms} ms`
  const s = ms / 1000
  if (s < 120) return `${Number.isInteger(s) ? s : s.toFixed(1)} s`
  const m = s / 60
  return `${Number.isInteger(m) ? m : m.toFixed(1)} min`
}

export function timeoutOutput(toolName: string, ms: number): ToolOutput {
  const sentence =
    `tool "${toolName}" did not finish within its ${formatDuration(ms)} time limit and was stopped; any effects it had may be partial. ` +
    'Try a smaller or faster step (narrow the input, split the work, or run long jobs in the background) rather than repeating the same call.'
  return {
    content: `Error [${TOOL_TIMEOUT}]: ${sentence}`,
    isError: true,
    error: { code: TOOL_TIMEOUT, message: `timed out after ${ms} ms` },
    meta: { timeoutMs: ms },
  }
}

export function apply(ctx: Context, config: TimeoutPolicyConfig): void {
  ctx.on('tools/execute', async (payload: ExecutePayload, next) => {
    const ms = budgetFor(payload.tool, config)
    if (!(ms > 0)) return next()
    let timedOut = false
    let timer: ReturnType<typeof setTimeout> | undefined
    const deadline = new Promise<void>((resolve) => {
      timer = setTimeout(() => {
        timedOut = true
        payload.abort(`timed out after ${formatDuration(ms)}`)
        resolve()
      }, ms)
    })
    try {
      // Racing keeps the deadline even if an inner listener ignores the abort; the call's own
      // result (a CANCELLED, or a late answer) is replaced once the deadline has fired.
      const output = await Promise.race([next(), deadline])
      return timedOut || output === undefined ? timeoutOutput(payload.tool.name, ms) : output
    } finally {
      clearTimeout(timer)
    }
  })
}
