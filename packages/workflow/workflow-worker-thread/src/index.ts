// @dsh/workflow-worker-thread: the `ctx.workflowEngine` provider. Each run executes its script
// (code the model wrote) through `ctx.codeRuntime` for the parent agent's session and cwd, so it is
// confined like run_code (the base bundle's runtime: a child process in the session's sandbox);
// without a runtime it falls back to @dsh/code-runtime-worker-thread's in-process runner only where
// nothing is confined. The children stay on the host and are started through `ctx.subagents`,
// reached from the script as `agents.spawn({...})`.
import type { Context } from 'cordis'
import Schema from 'schemastery'
import type { Agent } from '@dsh/agent'
import type { Binding, CodeLog, CodeRunRequest, CodeRunResult } from '@dsh/code-runtime'
import { runInWorker } from '@dsh/code-runtime-worker-thread'
import { SubagentError, type SubagentRecord } from '@dsh/subagent'
import {
  WorkflowEngine,
  checkChildRequest,
  describePrompt,
  type WorkflowChildRequest,
  type WorkflowChildResult,
  type WorkflowLimits,
  type WorkflowRunEvent,
  type WorkflowRunRequest,
  type WorkflowRunResult,
} from '@dsh/workflow'

export interface WorkerThreadWorkflowEngineConfig extends WorkflowLimits {
  memoryMb: number
  maxLogChars: number
}

const messageOf = (error: unknown) => (error instanceof Error ? error.message : String(error))
const codedError = (code: string, message: string) => Object.assign(new Error(message), { code })

export class WorkerThreadWorkflowEngine extends WorkflowEngine {
  static inject = ['subagents']
  static Config: Schema<Partial<WorkerThreadWorkflowEngineConfig>, WorkerThreadWorkflowEngineConfig> = Schema.object({
    maxChildren: Schema.natural().min(1).default(16).description('Most children one run may start.'),
    maxConcurrent: Schema.natural()
      .min(1)
      .default(4)
      .description('Most children of one run running at once (others wait for a slot).'),
    timeoutMs: Schema.natural().min(1).default(1_800_000).description('Wall-clock budget of one run, in ms.'),
    maxDepth: Schema.natural()
      .min(1)
      .default(1)
      .description('Runs may start only from agents at a delegation depth below this (1: root agents only).'),
    memoryMb: Schema.natural().min(8).default(128).description('Heap cap of the script worker, in MiB.'),
    maxLogChars: Schema.natural().default(20_000).description('Console output kept per run, in characters.'),
  })

  constructor(
    ctx: Context,
    readonly config: WorkerThreadWorkflowEngineConfig,
  ) {
    super(ctx)
  }

  resolveLimits(requested: Partial<WorkflowLimits> = {}): WorkflowLimits {
    const pick = (key: keyof WorkflowLimits) => {
      const value = requested[key]
      const ceiling = this.config[key]
      return typeof value === 'number' && Number.isFinite(value) && value > 0
        ? Math.min(Math.floor(value), ceiling)
        : ceiling
    }
    return {
      maxChildren: pick('maxChildren'),
      maxConcurrent: pick('maxConcurrent'),
      timeoutMs: pick('timeoutMs'),
      maxDepth: pick('maxDepth'),
    }
  }

  async run(request: WorkflowRunRequest): Promise<WorkflowRunResult> {
    const started = performance.now()
    const limits = this.resolveLimits(request.limits)
    const children: WorkflowChildResult[] = []
    const emit = (event: WorkflowRunEvent) => {
      try {
        request.onEvent?.(event)
      } catch (error) {
        this.ctx.logger('workflow').warn('a workflow event observer threw: %s', messageOf(error))
      }
    }
    const done = (result: Omit<WorkflowRunResult, 'children' | 'limits' | 'durationMs'>): WorkflowRunResult => ({
      ...result,
      children: children.filter(Boolean),
      limits,
      durationMs: Math.round(performance.now() - started),
    })
    const depth = this.ctx.subagents.depthOf(request.parent)
    if (depth >= limits.maxDepth) {
      return done({
        status: 'failed',
        logs: [],
        error: {
          code: 'DEPTH_LIMIT',
          message: `this agent is at delegation depth ${depth}; workflows may only be started below depth ${limits.maxDepth}. Do the work yourself or with the subagent tool`,
        },
      })
    }

    // Aborted when the run ends for any reason: queued spawns give up, running children are cancelled.
    const runEnd = new AbortController()
    const outer = request.signal
    const onOuter = () => runEnd.abort(outer?.reason)
    if (outer?.aborted) onOuter()
    else outer?.addEventListener('abort', onOuter, { once: true })
    const slots = new Slots(limits.maxConcurrent)
    let startedCount = 0

    const spawn: Binding = async (arg, call) => {
      const problem = checkChildRequest(arg)
      if (problem) throw codedError('INVALID_REQUEST', problem)
      if (startedCount >= limits.maxChildren) {
        throw codedError(
          'CHILD_LIMIT',
          `this run already started ${limits.maxChildren} children, the most one run may start`,
        )
      }
      const index = startedCount++
      const child = arg as WorkflowChildRequest
      const description = child.description?.trim() || describePrompt(child.prompt)
      const signal = AbortSignal.any([runEnd.signal, call.signal])
      const release = await slots.take(signal)
      try {
        const record = await this.startChild(request.parent, { ...child, description }, request.callId, signal, slots)
        emit({
          type: 'child-started',
          index,
          id: record.record.id,
          description,
          provider: record.record.provider,
          ...(record.record.sessionId ? { sessionId: record.record.sessionId } : {}),
        })
        const final = await record.finished
        const result = toChild(final, index, description)
        children[index] = result
        emit({ type: 'child-finished', child: result })
        return result
      } finally {
        release()
      }
    }

    try {
      const outcome = await this.runScript({
        code: request.script,
        language: 'javascript',
        bindings: { agents: { spawn } },
        globals: { input: request.input ?? null },
        timeoutMs: limits.timeoutMs,
        memoryMb: this.config.memoryMb,
        filename: 'workflow.js',
        ...(outer ? { signal: outer } : {}),
        onLog: (log) => emit({ type: 'log', level: log.level, text: log.text }),
        sessionId: request.parent.session.id,
        cwd: request.parent.cwd,
      })
      // The script ended: nothing it started may outlive it.
      runEnd.abort(new Error('the workflow run ended'))
      await Promise.all(slots.drained())
      const logs = capLogs(outcome.logs, this.config.maxLogChars)
      if (!outcome.error)
        return done({ status: 'completed', logs, ...(outcome.value !== undefined ? { value: outcome.value } : {}) })
      const status = outcome.error.code === 'CANCELLED' ? 'cancelled' : 'failed'
      return done({ status, logs, error: outcome.error })
    } finally {
      runEnd.abort(new Error('the workflow run ended'))
      outer?.removeEventListener('abort', onOuter)
    }
  }

  /**
   * Runs the script through `ctx.codeRuntime` (which confines it by the session's sandbox policy,
   * or refuses). Without a runtime, the in-process worker runs it only when no sandbox policy is
   * loaded or the session is danger-full-access; otherwise the run is refused (fail closed).
   */
  private async runScript(script: CodeRunRequest & { sessionId: string; cwd: string }): Promise<CodeRunResult> {
    const runtime = this.ctx.get('codeRuntime')
    if (runtime) return runtime.run(script)
    const policy = this.ctx.get('sandboxPolicy')
    const mode = policy?.modeFor(script.sessionId)
    if (policy && mode !== 'danger-full-access') {
      return {
        logs: [],
        calls: 0,
        durationMs: 0,
        error: {
          code: 'REFUSED',
          message: `the script was not run: no code runtime is loaded to confine it, and the session's sandbox mode is ${mode}`,
        },
      }
    }
    return runInWorker(
      {
        ...script,
        language: 'javascript',
        bindings: script.bindings ?? {},
        globals: script.globals ?? {},
        timeoutMs: script.timeoutMs ?? this.config.timeoutMs,
        memoryMb: script.memoryMb ?? this.config.memoryMb,
        filename: script.filename ?? 'workflow.js',
      },
      { maxLogChars: this.config.maxLogChars },
    )
  }

  /**
   * Starts one child. A `CONCURRENCY_LIMIT` refusal (the process-wide subagent limit, reached by
   * other work) waits for one of this run's own children to finish and tries again; with none of
   * its own running it fails the spawn.
   */
  private async startChild(
    parent: Agent,
    child: WorkflowChildRequest & { description: string },
    callId: string | undefined,
    signal: AbortSignal,
    slots: Slots,
  ) {
    for (;;) {
      if (signal.aborted) throw codedError('CANCELLED', 'the workflow run ended before this child started')
      try {
        return await this.ctx.subagents.start({
          parent,
          description: child.description,
          prompt: child.prompt,
          ...(child.provider !== undefined ? { provider: child.provider } : {}),
          ...(child.world !== undefined ? { world: child.world } : {}),
          ...(callId !== undefined ? { callId } : {}),
          signal,
        })
      } catch (error) {
        if (SubagentError.is(error) && error.code === 'CONCURRENCY_LIMIT' && slots.busy() > 1) {
          await slots.someoneLeft(signal)
          continue
        }
        if (SubagentError.is(error)) throw codedError(error.code, error.message)
        throw error
      }
    }
  }
}

/** The first `max` characters of console output (a runtime keeps up to its own cap). */
function capLogs(logs: CodeLog[], max: number): CodeLog[] {
  const kept: CodeLog[] = []
  let room = max
  for (const log of logs) {
    if (room <= 0) break
    kept.push(log.text.length <= room ? log : { level: log.level, text: log.text.slice(0, room) })
    room -= log.text.length
  }
  return kept
}

function toChild(record: SubagentRecord, index: number, description: string): WorkflowChildResult {
  const status = record.status === 'completed' || record.status === 'cancelled' ? record.status : 'failed'
  return {
    id: record.id,
    index,
    description,
    status,
    text: record.text ?? '',
    ...(record.error ? { error: { code: record.error.code, message: record.error.message } } : {}),
    ...(record.usage ? { usage: record.usage } : {}),
    ...(record.sessionId !== undefined ? { sessionId: record.sessionId } : {}),
  }
}

/** A counting semaphore whose waiters give up when their signal aborts. */
class Slots {
  private used = 0
  private readonly waiters: Array<() => void> = []
  private readonly leaving: Array<() => void> = []
  private readonly holders = new Set<Promise<void>>()

  constructor(private readonly size: number) {}

  busy(): number {
    return this.used
  }

  async take(signal: AbortSignal): Promise<() => void> {
    while (this.used >= this.size) {
      if (signal.aborted) throw codedError('CANCELLED', 'the workflow run ended before this child started')
      await new Promise<void>((wake) => {
        const waiter = () => {
          signal.removeEventListener('abort', onAbort)
          wake()
        }
        // An aborted waiter leaves the queue, so the next release wakes a live one.
        const onAbort = () => {
          const index = this.waiters.indexOf(waiter)
          if (index >= 0) this.waiters.splice(index, 1)
          wake()
        }
        signal.addEventListener('abort', onAbort, { once: true })
        this.waiters.push(waiter)
      })
    }
    if (signal.aborted) throw codedError('CANCELLED', 'the workflow run ended before this child started')
    this.used++
    let free!: () => void
    const held = new Promise<void>((resolve) => (free = resolve))
    this.holders.add(held)
    let released = false
    return () => {
      if (released) return
      released = true
      this.used--
      this.holders.delete(held)
      free()
      this.waiters.shift()?.()
      for (const wake of this.leaving.splice(0)) wake()
    }
  }

  /** Resolves when any holder releases its slot (or the signal aborts). */
  someoneLeft(signal: AbortSignal): Promise<void> {
    return new Promise((resolve) => {
      if (signal.aborted) return resolve()
      signal.addEventListener('abort', () => resolve(), { once: true })
      this.leaving.push(resolve)
    })
  }

  /** One promise per slot still held: settled once it is released. */
  drained(): Promise<void>[] {
    return [...this.holders]
  }
}

export const name = 'workflow-worker-thread'
export default WorkerThreadWorkflowEngine
