// @dsh/code-runtime-subprocess: the `ctx.codeRuntime` provider that runs each program in ONE fresh
// Node child process, confined like a bash command: the argv comes from `ctx.sandbox.wrap()` under
// the policy `ctx.sandboxPolicy` resolves for the run's session, the process starts through
// `ctx.subprocess` with an exact environment (PATH only: no credential is in its reach), and its
// binding calls travel back over stdin/stdout as newline-delimited JSON, checked and size-capped
// at the boundary. No runner for a confining mode: the run is refused (REFUSED), nothing starts.
import type { Context } from 'cordis'
import Schema from 'schemastery'
import {
  CodeRuntime,
  RunState,
  cancelledError,
  resolveCodeRun,
  memoryError,
  messageOf,
  timeoutError,
  type CodeRunRequest,
  type CodeRunResult,
  type HostReply,
  type ResolvedCodeRun,
  type RunOutcome,
} from '@dsh/code-runtime'
import { isSandboxError, type SandboxInvocation, type SandboxPolicy } from '@dsh/sandbox'
import type {} from '@dsh/sandbox-policy'
import type { ProcessHandle } from '@dsh/subprocess'
import { plainService } from '@dsh/plain-service'
import { CHILD_MARKER, CHILD_SOURCE } from './child-source.ts'

export { CHILD_MARKER } from './child-source.ts'

export interface SubprocessCodeRuntimeConfig {
  timeoutMs: number
  maxTimeoutMs: number
  memoryMb: number
  maxLogChars: number
  maxMessageBytes: number
  node?: string
}

/** Lines kept of the child's stderr (Node's own fatal messages, the runner's errors). */
const STDERR_TAIL = 4096

export class SubprocessCodeRuntime extends CodeRuntime {
  static inject = ['subprocess', 'sandbox', 'sandboxPolicy']
  static Config: Schema<Partial<SubprocessCodeRuntimeConfig>, SubprocessCodeRuntimeConfig> = Schema.object({
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
    memoryMb: Schema.natural()
      .min(16)
      .default(256)
      .description('Heap cap of each program process, in MiB (V8 old generation).'),
    maxLogChars: Schema.natural().min(0).default(50_000).description('Console output kept per run, in characters.'),
    maxMessageBytes: Schema.natural()
      .min(1024)
      .default(16 * 1024 * 1024)
      .description(
        'Largest message between the program and dsh (a call argument, a tool result, a return value), in bytes.',
      ),
    node: Schema.string().description('Node binary that runs programs. Default: the one running dsh.'),
  })

  private readonly subprocess: Context['subprocess']
  private readonly sandbox: Context['sandbox']
  private readonly policy: Context['sandboxPolicy']

  constructor(
    ctx: Context,
    readonly config: SubprocessCodeRuntimeConfig,
  ) {
    super(ctx)
    if (config.timeoutMs > config.maxTimeoutMs)
      throw new TypeError(
        `code-runtime-subprocess: timeoutMs (${config.timeoutMs}) exceeds maxTimeoutMs (${config.maxTimeoutMs})`,
      )
    if (config.node !== undefined && config.node.trim() === '')
      throw new TypeError('code-runtime-subprocess: node must name a Node binary (or be left out)')
    this.subprocess = plainService(ctx.subprocess)
    this.sandbox = plainService(ctx.sandbox)
    this.policy = plainService(ctx.sandboxPolicy)
  }

  /** Defaults from config; `timeoutMs` is capped at `maxTimeoutMs`. Throws TypeError for a malformed request. */
  resolve(request: CodeRunRequest): ResolvedCodeRun {
    return resolveCodeRun(request, this.config)
  }

  /** The policy a run of `request` is confined by (the session's, for the program's cwd). */
  policyFor(request: Pick<CodeRunRequest, 'sessionId' | 'cwd'>): SandboxPolicy {
    const session = request.sessionId !== undefined ? { sessionId: request.sessionId } : {}
    const cwd = request.cwd ?? this.policy.workspaceRoot(session)
    return this.policy.resolve({ ...session, cwd })
  }

  async run(request: CodeRunRequest): Promise<CodeRunResult> {
    const resolved = this.resolve(request)
    const state = new RunState(resolved, this.config.maxLogChars)
    if (resolved.signal?.aborted)
      return state.finish({ error: { code: 'CANCELLED', message: 'the run was cancelled before it started' } })
    const start = await state.start()
    if ('message' in start) return state.finish({ error: start })

    const cwd =
      resolved.cwd ??
      this.policy.workspaceRoot(resolved.sessionId !== undefined ? { sessionId: resolved.sessionId } : {})
    const policy = this.policyFor({ ...resolved, cwd })
    const argv = [
      this.config.node ?? process.execPath,
      `--max-old-space-size=${resolved.memoryMb}`,
      '--no-warnings',
      '-e',
      CHILD_SOURCE,
      CHILD_MARKER,
    ]
    let invocation: SandboxInvocation
    try {
      invocation = await this.sandbox.wrap({ argv, cwd, policy })
    } catch (error) {
      if (!isSandboxError(error))
        return state.finish({
          error: { code: 'INTERNAL', message: `the program's process could not be prepared: ${messageOf(error)}` },
        })
      return state.finish({
        error: {
          code: 'REFUSED',
          message: `the program was not run because the session's ${policy.mode} sandbox cannot confine it: ${error.message}`,
        },
      })
    }
    if (resolved.signal?.aborted)
      return state.finish({ error: { code: 'CANCELLED', message: 'the run was cancelled before it started' } })
    return this.supervise(resolved, state, start, invocation, cwd)
  }

  /** Starts the confined child, speaks the protocol with it, and ends the run. Never rejects. */
  private supervise(
    request: ResolvedCodeRun,
    state: RunState,
    start: object,
    invocation: SandboxInvocation,
    cwd: string,
  ): Promise<CodeRunResult> {
    const [file, ...args] = invocation.argv
    const maxBytes = this.config.maxMessageBytes
    let handle: ProcessHandle
    try {
      handle = this.subprocess.spawn({
        file: file!,
        args,
        cwd,
        // Exact: nothing of the harness's environment (API keys included) reaches the program.
        env: { base: 'exact', set: { PATH: process.env.PATH ?? '/usr/bin:/bin' } },
        stdin: 'pipe',
        stderr: 'pipe',
        retentionMode: 'none',
        kill: { graceMs: 0 },
        drainMs: 50,
        ...(invocation.launcher ? { launcher: invocation.launcher } : {}),
      })
    } catch (error) {
      return Promise.resolve(
        state.finish({
          error: { code: 'INTERNAL', message: `the program's process could not start: ${messageOf(error)}` },
        }),
      )
    }

    return new Promise<CodeRunResult>((resolve) => {
      let done = false
      let stderrTail = ''
      const end = (outcome: RunOutcome) => {
        if (done) return
        done = true
        clearTimeout(timer)
        request.signal?.removeEventListener('abort', onAbort)
        // The whole group at once (a busy loop, a process the program started, a handler that
        // ignores SIGTERM): the result does not wait for it to be gone.
        handle.signal('SIGKILL')
        resolve(state.finish(outcome))
      }
      const timer = setTimeout(() => end({ error: timeoutError(request.timeoutMs) }), request.timeoutMs)
      const onAbort = () => end({ error: cancelledError(request.signal!) })
      request.signal?.addEventListener('abort', onAbort, { once: true })

      const send = (message: object) => {
        if (done) return
        try {
          handle.write(`${JSON.stringify(message)}\n`)
        } catch {
          // No stdin: the process did not start; its exit record (spawnError) ends the run.
        }
      }
      const reply = (message: HostReply) => {
        if (done) return
        const line = JSON.stringify(message)
        if (Buffer.byteLength(line) > maxBytes) {
          return send({
            t: 'reply',
            id: message.id,
            ok: false,
            message: `the result is larger than the ${maxBytes}-byte message limit; ask for less (a range, a filter)`,
            code: 'MESSAGE_TOO_LARGE',
          })
        }
        send(message)
      }

      // The unfinished line, as raw bytes: a newline byte never sits inside a UTF-8 sequence, so
      // lines are cut on bytes and decoded whole; each byte is scanned once.
      let partial: Buffer[] = []
      let partialBytes = 0
      const receive = (line: string) => {
        let raw: unknown
        try {
          raw = JSON.parse(line)
        } catch {
          // Not a message: the program wrote to its standard output directly (a file descriptor write).
          return state.record({ level: 'log', text: line })
        }
        if (raw === null || typeof raw !== 'object' || typeof (raw as { t?: unknown }).t !== 'string')
          return state.record({ level: 'log', text: line })
        state.receive(raw, "the program's process", end, reply)
      }
      handle.onOutput((chunk) => {
        if (done) return
        if (chunk.stream === 'stderr') {
          stderrTail = (stderrTail + Buffer.from(chunk.data).toString('utf8')).slice(-STDERR_TAIL)
          return
        }
        let data = Buffer.from(chunk.data.buffer, chunk.data.byteOffset, chunk.data.byteLength)
        for (let newline = data.indexOf(10); !done && newline >= 0; newline = data.indexOf(10)) {
          if (partialBytes + newline > maxBytes) return end({ error: tooLarge(maxBytes) })
          const line = Buffer.concat([...partial, data.subarray(0, newline)]).toString('utf8')
          partial = []
          partialBytes = 0
          data = data.subarray(newline + 1)
          if (line !== '') receive(line)
        }
        if (done || data.byteLength === 0) return
        partialBytes += data.byteLength
        if (partialBytes > maxBytes) return end({ error: tooLarge(maxBytes) })
        partial.push(Buffer.from(data))
      })
      void handle.exited.then((exit) => {
        if (done) return
        if (exit.spawnError)
          return end({
            error: {
              code: 'INTERNAL',
              message: `the program's process could not start: ${exit.spawnError.code} ${exit.spawnError.message}`,
            },
          })
        if (/heap out of memory|Reached heap limit/i.test(stderrTail))
          return end({ error: memoryError(request.memoryMb) })
        const last = stderrTail.trim().split('\n').at(-1)?.trim()
        const how = exit.signal ? `signal ${exit.signal}` : `code ${exit.code}`
        end({
          error: {
            code: 'INTERNAL',
            message: `the program's process exited (${how}) before the program finished${last ? `: ${last}` : ''}`,
          },
        })
      })

      send({ t: 'start', ...start })
    })
  }
}

function tooLarge(maxBytes: number) {
  return {
    code: 'INTERNAL' as const,
    message: `the program sent a message larger than the ${maxBytes}-byte limit (a call argument or return value); pass or return less`,
  }
}

export const name = 'code-runtime-subprocess'
export default SubprocessCodeRuntime
