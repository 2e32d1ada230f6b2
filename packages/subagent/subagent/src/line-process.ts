// A child process that speaks newline-delimited JSON on stdin/stdout, for the out-of-process
// providers that drive another agent's stream wire (Claude Code's stream-json, Codex's
// app-server). It starts through the process seam (`ctx.subprocess`: its own process group,
// a scrubbed environment, the group reaped when it ends), resolves once the process runs (a
// missing executable rejects with `code: 'ENOENT'`), hands each parsed stdout line to the
// listener, keeps the tail of stderr for error messages, and closes politely (end stdin, then
// SIGTERM to the group, then SIGKILL).
import type { EnvSpec, ProcessHandle, SubprocessService } from '@dsh/subprocess'

export interface LineProcessOptions {
  /** The process seam (`ctx.subprocess`). */
  subprocess: SubprocessService
  command: string
  args: readonly string[]
  cwd: string
  /** The child's environment (default base: scrubbed). */
  env: EnvSpec
  /** Between SIGTERM and SIGKILL when the group is terminated (default 2000 ms). */
  killGraceMs?: number
  /** Called with each stdout line that parses as JSON. */
  onMessage(message: unknown): void
  /** Called with a stdout line that is not JSON (default: ignored). */
  onNoise?(line: string): void
}

export interface LineProcess {
  readonly pid: number
  /** Writes one JSON line; false when stdin is closed. */
  send(message: unknown): boolean
  /** Resolves once the process exited. */
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>
  /** The last few lines of stderr (for error messages). */
  stderrTail(): string
  /** Ends stdin, waits up to `graceMs` for an exit, then terminates (and kills after another grace). */
  close(graceMs?: number): Promise<void>
  /** Sends a signal now. */
  signal(signal: NodeJS.Signals): void
}

const STDERR_KEEP = 4000

/** A start failure with the seam's error code (`ENOENT`, `CWD_NOT_FOUND`, ...). */
function spawnFailure(command: string, error: { code: string; message: string }): Error {
  return Object.assign(new Error(`cannot start ${command}: ${error.message}`), { code: error.code })
}

export async function startLineProcess(options: LineProcessOptions): Promise<LineProcess> {
  const handle: ProcessHandle = options.subprocess.spawn({
    file: options.command,
    args: [...options.args],
    cwd: options.cwd,
    env: options.env,
    stdin: 'pipe',
    retentionMode: 'none',
    kill: { graceMs: options.killGraceMs ?? 2000 },
  })
  let stderr = ''
  let buffer = ''
  const decoder = new TextDecoder()
  const errDecoder = new TextDecoder()
  handle.onOutput((chunk) => {
    if (chunk.stream === 'stderr') {
      stderr = (stderr + errDecoder.decode(chunk.data, { stream: true })).slice(-STDERR_KEEP)
      return
    }
    buffer += decoder.decode(chunk.data, { stream: true })
    let nl: number
    while ((nl = buffer.indexOf('\n')) >= 0) {
      const line = buffer.slice(0, nl).trim()
      buffer = buffer.slice(nl + 1)
      if (line === '') continue
      let message: unknown
      try {
        message = JSON.parse(line)
      } catch {
        options.onNoise?.(line)
        continue
      }
      options.onMessage(message)
    }
  })
  let done = false
  const exited = handle.exited.then((exit) => {
    done = true
    return { exit, status: { code: exit.code, signal: (exit.signal ?? null) as NodeJS.Signals | null } }
  })
  if (handle.pid === undefined) {
    const { exit } = await exited
    throw spawnFailure(
      options.command,
      exit.spawnError ?? { code: 'SPAWN_FAILED', message: 'the process did not start' },
    )
  }
  let stdinOpen = true
  const status = exited.then((e) => e.status)
  const within = (ms: number) =>
    Promise.race([status.then(() => true), new Promise<boolean>((r) => setTimeout(() => r(false), ms).unref())])
  return {
    pid: handle.pid,
    send(message) {
      if (!stdinOpen || done) return false
      try {
        handle.write(JSON.stringify(message) + '\n')
        return true
      } catch {
        return false
      }
    },
    exited: status,
    stderrTail() {
      return stderr.trim().split('\n').slice(-3).join(' | ')
    },
    async close(graceMs = 2000) {
      if (done) return
      if (stdinOpen) {
        stdinOpen = false
        try {
          handle.closeStdin()
        } catch {
          // already closed
        }
      }
      if (await within(graceMs)) return
      // TERM to the whole group, the seam's grace, then KILL.
      await handle.terminate()
    },
    signal(signal) {
      if (!done) handle.signal(signal)
    },
  }
}
