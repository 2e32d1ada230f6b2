// The `dsh-jsonrpc-agent` child started through the process seam (`ctx.subprocess`: its own
// process group, reaped when it ends, the seam's environment) and presented to
// `@dsh/sdk-client`'s Harness as the ChildProcess-shaped object its `spawnProcess` option asks for:
// piped stdin/stdout/stderr, `pid`, `exitCode`/`signalCode`, `kill()`, and the `error`, `exit` and
// `close` events.
import type { HarnessOptions } from '@dsh/sdk-client'
import { EventEmitter } from 'node:events'
import { PassThrough, Writable } from 'node:stream'
import type { EnvSpec, SubprocessService } from '@dsh/subprocess'

/** What Harness.start expects back from `spawnProcess` (Node's ChildProcess shape). */
type ServerProcess = ReturnType<NonNullable<HarnessOptions['spawnProcess']>>

export interface SeamProcessOptions {
  subprocess: SubprocessService
  /** The environment, built by the caller (the Harness's own `env` is not used). */
  env: EnvSpec
  /** Between SIGTERM and SIGKILL when the seam terminates the group. */
  graceMs: number
}

/** A `spawnProcess` for Harness.start that starts the server through `ctx.subprocess`. */
export function seamSpawner(options: SeamProcessOptions) {
  return (file: string, args: string[], spawnOptions: { cwd?: string }): ServerProcess => {
    if (!spawnOptions.cwd) throw new Error('subagent-sdk: the server needs a working directory')
    const handle = options.subprocess.spawn({
      file,
      args,
      cwd: spawnOptions.cwd,
      env: options.env,
      stdin: 'pipe',
      retentionMode: 'none',
      kill: { graceMs: options.graceMs },
    })
    const child = new EventEmitter() as EventEmitter & {
      stdin: Writable
      stdout: PassThrough
      stderr: PassThrough
      pid: number | undefined
      exitCode: number | null
      signalCode: NodeJS.Signals | null
      kill(signal?: NodeJS.Signals | number): boolean
    }
    let done = false
    child.stdout = new PassThrough()
    child.stderr = new PassThrough()
    child.stdin = new Writable({
      write(chunk: Buffer, _encoding, callback) {
        if (!done) {
          try {
            handle.write(new Uint8Array(chunk))
          } catch {
            // the process is gone; its exit is reported through 'close'
          }
        }
        callback()
      },
      final(callback) {
        if (!done) {
          try {
            handle.closeStdin()
          } catch {
            // already closed
          }
        }
        callback()
      },
    })
    child.pid = handle.pid
    child.exitCode = null
    child.signalCode = null
    child.kill = (signal: NodeJS.Signals | number = 'SIGTERM') => {
      if (done) return false
      handle.signal(typeof signal === 'number' ? 'SIGTERM' : signal)
      return true
    }
    handle.onOutput((chunk) => (chunk.stream === 'stderr' ? child.stderr : child.stdout).write(Buffer.from(chunk.data)))
    void handle.exited.then((exit) => {
      done = true
      child.stdout.end()
      child.stderr.end()
      if (exit.spawnError) {
        child.emit(
          'error',
          Object.assign(new Error(`spawn ${file} ${exit.spawnError.code} (${exit.spawnError.message})`), {
            code: exit.spawnError.code,
          }),
        )
        return
      }
      child.exitCode = exit.code
      child.signalCode = exit.signal as NodeJS.Signals | null
      child.emit('exit', exit.code, exit.signal)
      // After the output streams delivered what they hold, as Node's own 'close'.
      setImmediate(() => child.emit('close', exit.code, exit.signal))
    })
    return child as unknown as ServerProcess
  }
}
