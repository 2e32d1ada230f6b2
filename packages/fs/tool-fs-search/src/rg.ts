// Runs the packaged ripgrep binary with a fixed argv (no shell) and streams its stdout in lines.
import { spawn } from 'node:child_process'
import { rgPath } from '@vscode/ripgrep'

/** Absolute path of the ripgrep binary shipped in `@vscode/ripgrep`'s platform package. */
export const RG_PATH: string = rgPath

export interface RgOptions {
  cwd: string
  signal?: AbortSignal
  timeoutMs: number
  /** Called with each complete stdout line (without the newline). Return false to stop parsing;
   *  the remaining lines are then only counted. */
  onLine(line: string): boolean
}

export interface RgOutcome {
  /** rg exit code: 0 matches, 1 none, 2 error; null when killed. */
  code: number | null
  /** Lines seen on stdout, parsed or only counted. */
  lines: number
  stderr: string
  timedOut: boolean
  /** The process could not be started at all. */
  spawnError?: Error
}

const STDERR_CAP = 16 * 1024

function scrubbedEnv(): NodeJS.ProcessEnv {
  const env = { ...process.env }
  // `--no-config` already ignores it; dropping it too keeps the child's view plain.
  delete env.RIPGREP_CONFIG_PATH
  return env
}

export function runRg(argv: readonly string[], options: RgOptions): Promise<RgOutcome> {
  return new Promise((resolve) => {
    let lines = 0
    let parsing = true
    let stderr = ''
    let timedOut = false
    let pending: Buffer | undefined
    let settled = false
    const child = spawn(RG_PATH, argv as string[], {
      cwd: options.cwd,
      stdio: ['ignore', 'pipe', 'pipe'],
      env: scrubbedEnv(),
      windowsHide: true,
    })
    const kill = () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL')
    }
    const timer = setTimeout(() => {
      timedOut = true
      kill()
    }, options.timeoutMs)
    const onAbort = () => kill()
    options.signal?.addEventListener('abort', onAbort, { once: true })
    if (options.signal?.aborted) kill()

    const consume = (chunk: Buffer) => {
      let start = 0
      if (!parsing) {
        for (let at = chunk.indexOf(10); at !== -1; at = chunk.indexOf(10, at + 1)) lines++
        return
      }
      let buffer = chunk
      if (pending) {
        buffer = Buffer.concat([pending, chunk])
        pending = undefined
      }
      for (let at = buffer.indexOf(10); at !== -1; at = buffer.indexOf(10, start)) {
        lines++
        if (parsing) parsing = options.onLine(buffer.toString('utf8', start, at))
        start = at + 1
        if (!parsing) {
          for (let rest = buffer.indexOf(10, start); rest !== -1; rest = buffer.indexOf(10, rest + 1)) lines++
          return
        }
      }
      if (start < buffer.length) pending = buffer.subarray(start)
    }
    child.stdout.on('data', consume)
    child.stderr.on('data', (chunk: Buffer) => {
      if (stderr.length < STDERR_CAP) stderr += chunk.toString('utf8')
    })
    const finish = (code: number | null, spawnError?: Error) => {
      if (settled) return
      settled = true
      clearTimeout(timer)
      options.signal?.removeEventListener('abort', onAbort)
      if (pending && parsing) {
        lines++
        options.onLine(pending.toString('utf8'))
      } else if (pending) lines++
      resolve({ code, lines, stderr: stderr.slice(0, STDERR_CAP), timedOut, ...(spawnError ? { spawnError } : {}) })
    }
    child.on('error', (error) => finish(null, error))
    child.on('close', (code) => finish(code))
  })
}
