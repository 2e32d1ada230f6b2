// @dsh/timeout-policy: one `tools/execute` around-dispatch listener that gives each call a
// cooperative deadline. When the deadline wins it aborts the per-call signal (the tool body sees
// `call.signal` abort) and answers a structured TOOL_TIMEOUT result instead of the call's own.
// Time a call spends waiting for a person (an approval or a question asked inside it, named by the
// request's `callId`) does not count: the deadline pauses and resumes with what was left.
import type { Context } from 'cordis'
import Schema from 'schemastery'
import type { ExecutePayload, ToolDefinition, ToolOutput } from '@dsh/tools'
import type { ApprovalRequest } from '@dsh/user-approval'
import type { QuestionsRequest } from '@dsh/user-questions'

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

/**
 * One call's deadline: a budget that runs only while nobody is waited for. `hold()` stops the clock
 * (nested holds count), `release()` restarts it with the time that was left.
 */
export class Deadline {
  private left: number
  private since = 0
  private timer: ReturnType<typeof setTimeout> | undefined
  private holds = 0
  private done = false

  constructor(
    ms: number,
    private readonly fire: () => void,
  ) {
    this.left = ms
    this.start()
  }

  get paused(): boolean {
    return this.holds > 0
  }

  hold(): void {
    if (this.done || this.holds++ > 0) return
    clearTimeout(this.timer)
    this.timer = undefined
    this.left -= performance.now() - this.since
  }

  release(): void {
    if (this.done || this.holds === 0 || --this.holds > 0) return
    this.start()
  }

  stop(): void {
    this.done = true
    clearTimeout(this.timer)
  }

  private start(): void {
    this.since = performance.now()
    this.timer = setTimeout(
      () => {
        this.done = true
        this.fire()
      },
      Math.max(0, this.left),
    )
  }
}

interface Running {
  deadline: Deadline
  parentKey?: string
}

const keyOf = (sessionId: string | undefined, callId: string) => `${sessionId ?? ''}\u0000${callId}`

export function apply(ctx: Context, config: TimeoutPolicyConfig): void {
  // The calls under a deadline, by session and call id (a Code Mode call also names its entry call,
  // whose deadline holds with it). A set: a provider may reuse a call id.
  const running = new Map<string, Set<Running>>()
  // What each pending human wait holds, so its end releases exactly that.
  const held = new Map<string, Deadline[]>()

  const hold = (waitId: string, sessionId: string | undefined, callId: string | undefined) => {
    if (callId === undefined) return
    const deadlines: Deadline[] = []
    const seen = new Set<string>()
    let keys = [keyOf(sessionId, callId)]
    while (keys.length > 0) {
      const next: string[] = []
      for (const key of keys) {
        if (seen.has(key)) continue
        seen.add(key)
        for (const entry of running.get(key) ?? []) {
          deadlines.push(entry.deadline)
          if (entry.parentKey !== undefined) next.push(entry.parentKey)
        }
      }
      keys = next
    }
    if (deadlines.length === 0) return
    for (const deadline of deadlines) deadline.hold()
    held.set(waitId, deadlines)
  }
  const release = (waitId: string) => {
    const deadlines = held.get(waitId)
    if (!deadlines) return
    held.delete(waitId)
    for (const deadline of deadlines) deadline.release()
  }
  ctx.on('approval/requested', (request: ApprovalRequest) => hold(request.id, request.sessionId, request.callId))
  ctx.on('approval/resolved', (request: ApprovalRequest) => release(request.id))
  ctx.on('questions/asked', (request: QuestionsRequest) => hold(request.id, request.sessionId, request.callId))
  ctx.on('questions/resolved', (request: QuestionsRequest) => release(request.id))

  ctx.on('tools/execute', async (payload: ExecutePayload, next) => {
    const ms = budgetFor(payload.tool, config)
    if (!(ms > 0)) return next()
    let timedOut = false
    let deadline: Deadline | undefined
    const expired = new Promise<void>((resolve) => {
      deadline = new Deadline(ms, () => {
        timedOut = true
        payload.abort(`timed out after ${formatDuration(ms)}`)
        resolve()
      })
    })
    const { sessionId, callId, parentCallId } = payload.context
    const key = keyOf(sessionId, callId)
    const entry: Running = {
      deadline: deadline!,
      ...(parentCallId !== undefined ? { parentKey: keyOf(sessionId, parentCallId) } : {}),
    }
    let entries = running.get(key)
    if (!entries) running.set(key, (entries = new Set()))
    entries.add(entry)
    try {
      // Racing keeps the deadline even if an inner listener ignores the abort; the call's own
      // result (a CANCELLED, or a late answer) is replaced once the deadline has fired.
      const output = await Promise.race([next(), expired])
      return timedOut || output === undefined ? timeoutOutput(payload.tool.name, ms) : output
    } finally {
      deadline!.stop()
      entries.delete(entry)
      if (entries.size === 0) running.delete(key)
    }
  })
}
