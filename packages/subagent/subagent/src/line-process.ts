// A child process that speaks newline-delimited JSON on stdin/stdout, for the out-of-process
// providers that drive another agent's stream wire (Claude Code's stream-json, Codex's
// app-server). It resolves once the process runs (a missing executable rejects), hands each
// parsed stdout line to the listener, keeps the tail of stderr for error messages, and closes
// politely (end stdin, then SIGTERM, then SIGKILL).
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process'

export interface LineProcessOptions {
  command: string
  args: readonly string[]
  cwd: string
  env: NodeJS.ProcessEnv
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

export function startLineProcess(options: LineProcessOptions): Promise<LineProcess> {
  return new Promise((resolve, reject) => {
    let child: ChildProcessWithoutNullStreams
    try {
      child = spawn(options.command, [...options.args], { cwd: options.cwd, env: options.env, stdio: ['pipe', 'pipe', 'pipe'] })
    } catch (error) {
      reject(error)
      return
    }
    let stderr = ''
    let buffer = ''
    child.stdout.setEncoding('utf8')
    child.stdout.on('data', (text: string) => {
      buffer += text
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
    child.stderr.setEncoding('utf8')
    child.stderr.on('data', (text: string) => {
      stderr = (stderr + text).slice(-STDERR_KEEP)
    })
    // A child that dies while we write must not crash the host.
    child.stdin.on('error', () => {})
    const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((done) => {
      child.once('close', (code, signal) => done({ code, signal }))
    })
    let running = false
    child.once('error', (error) => {
      if (!running) reject(error)
    })
    child.once('spawn', () => {
      running = true
      const handle: LineProcess = {
        pid: child.pid!,
        send(message) {
          if (child.stdin.destroyed || child.stdin.writableEnded) return false
          child.stdin.write(JSON.stringify(message) + '\n')
          return true
        },
        exited,
        stderrTail() {
          return stderr
            .trim()
            .split('\n')
            .slice(-3)
            .join(' | ')
        },
        async close(graceMs = 2000) {
          if (child.exitCode !== null || child.signalCode !== null) return
          child.stdin.end()
          const within = (ms: number) => Promise.race([exited.then(() => true), new Promise<boolean>((r) => setTimeout(() => r(false), ms).unref())])
          if (await within(graceMs)) return
          child.kill('SIGTERM')
          if (await within(graceMs)) return
          child.kill('SIGKILL')
          await exited
        },
        signal(signal) {
          if (child.exitCode === null && child.signalCode === null) child.kill(signal)
        },
      }
      resolve(handle)
    })
  })
}
