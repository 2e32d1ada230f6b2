// @dsh/code-runtime-worker-thread: the `ctx.codeRuntime` provider that runs each program in ONE
// fresh Node worker thread (separate isolate, empty environment, heap cap, hard termination).
// Not a security boundary: a program can do what the harness process can (files, network, the
// process's memory and /proc entry). So it runs programs only where the session's sandbox mode is
// danger-full-access; in a confining mode it refuses (REFUSED) and @dsh/code-runtime-subprocess is
// the provider to load.
import type { Context } from 'cordis'
import type {} from '@dsh/sandbox-policy'
import Schema from 'schemastery'
import {
  CodeRuntime,
  resolveCodeRun,
  type CodeRunRequest,
  type CodeRunResult,
  type ResolvedCodeRun,
} from '@dsh/code-runtime'
import { runInWorker } from './run.ts'

export { runInWorker, type RunLimits } from './run.ts'
export { stripTypes, TypeStripError } from '@dsh/code-runtime'

export interface WorkerThreadCodeRuntimeConfig {
  timeoutMs: number
  maxTimeoutMs: number
  memoryMb: number
  maxLogChars: number
}

export class WorkerThreadCodeRuntime extends CodeRuntime {
  static Config: Schema<Partial<WorkerThreadCodeRuntimeConfig>, WorkerThreadCodeRuntimeConfig> = Schema.object({
    timeoutMs: Schema.natural()
      .min(1)
      .default(60_000)
      .description('Time budget of a run that names none, in ms (binding calls included).'),
    maxTimeoutMs: Schema.natural()
      .min(1)
      .default(1_800_000)
      .description(
        'Largest time budget a request may ask for, in ms (a workflow script may run 30 minutes; run_code caps its own).',
      ),
    memoryMb: Schema.natural().min(8).default(256).description('Heap cap of each worker, in MiB (V8 old generation).'),
    maxLogChars: Schema.natural().min(0).default(50_000).description('Console output kept per run, in characters.'),
  })

  constructor(
    ctx: Context,
    readonly config: WorkerThreadCodeRuntimeConfig,
  ) {
    super(ctx)
    if (config.timeoutMs > config.maxTimeoutMs)
      throw new TypeError(
        `code-runtime-worker-thread: timeoutMs (${config.timeoutMs}) exceeds maxTimeoutMs (${config.maxTimeoutMs})`,
      )
  }

  /** Defaults from config; `timeoutMs` is capped at `maxTimeoutMs`. Throws TypeError for a malformed request. */
  resolve(request: CodeRunRequest): ResolvedCodeRun {
    return resolveCodeRun(request, this.config)
  }

  run(request: CodeRunRequest): Promise<CodeRunResult> {
    const resolved = this.resolve(request)
    // Fail closed: with a sandbox policy in the world, only danger-full-access runs in-process.
    const policy = this.ctx.get('sandboxPolicy')
    const mode = policy?.modeFor(resolved.sessionId)
    if (policy && mode !== 'danger-full-access') {
      return Promise.resolve({
        logs: [],
        calls: 0,
        durationMs: 0,
        error: {
          code: 'REFUSED',
          message: `the program was not run: this runtime runs programs inside the dsh process, unconfined, and the session's sandbox mode is ${mode}. Use the tools directly, or ask the user to switch to danger-full-access (or to load @dsh/code-runtime-subprocess, which confines programs)`,
        },
      })
    }
    return runInWorker(resolved, { maxLogChars: this.config.maxLogChars })
  }
}

export const name = 'code-runtime-worker-thread'
export default WorkerThreadCodeRuntime
