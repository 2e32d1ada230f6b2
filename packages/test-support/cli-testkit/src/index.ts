// @dsh/cli-testkit: runs the real `dsh` bin as a subprocess for end-to-end tests, with a minimal
// environment (PATH, HOME and the suite's NODE_COMPILE_CACHE plus what the test passes), stdin
// given or closed, and the whole of stdout and stderr collected.
import { spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'

/** The launcher script of @dsh/cli in this checkout. */
export const DSH_BIN = fileURLToPath(new URL('../../../boot/cli/bin/dsh.mjs', import.meta.url))

/**
 * What every spawned bin inherits from the test process: PATH, HOME and NODE_COMPILE_CACHE (the
 * suite's global setup names one code cache directory for the run, so a bin started with a fresh
 * dsh home does not compile its stack again; a test of the home's own cache passes
 * `NODE_COMPILE_CACHE: undefined`).
 */
export function inheritedEnv(): Record<string, string | undefined> {
  return { PATH: process.env.PATH, HOME: process.env.HOME, NODE_COMPILE_CACHE: process.env.NODE_COMPILE_CACHE }
}

export interface DshRun {
  code: number | null
  signal: NodeJS.Signals | null
  stdout: string
  stderr: string
}

export interface DshRunOptions {
  cwd: string
  /** Added to `inheritedEnv()`; `undefined` values are left out. Nothing else is inherited. */
  env?: Record<string, string | undefined>
  /** Written to stdin, which is then closed (closed at once when absent). */
  stdin?: string
  /** Kill the process after this long (default 60 s) so a hung run fails the test, not the suite. */
  timeoutMs?: number
}

export function runDsh(args: readonly string[], options: DshRunOptions): Promise<DshRun> {
  const env: Record<string, string> = {}
  for (const [key, value] of Object.entries({ ...inheritedEnv(), ...options.env })) {
    if (value !== undefined) env[key] = value
  }
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [DSH_BIN, ...args], {
      cwd: options.cwd,
      env,
      stdio: ['pipe', 'pipe', 'pipe'],
    })
    let stdout = ''
    let stderr = ''
    const timer = setTimeout(() => child.kill('SIGKILL'), options.timeoutMs ?? 60_000)
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d))
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d))
    child.on('error', (error) => {
      clearTimeout(timer)
      reject(error)
    })
    child.on('close', (code, signal) => {
      clearTimeout(timer)
      resolve({ code, signal, stdout, stderr })
    })
    child.stdin.end(options.stdin ?? '')
  })
}
