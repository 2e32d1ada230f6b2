// Runs the packaged ripgrep binary through the `ctx.subprocess` seam with a fixed argv (no shell),
// confined by the session's sandbox when the caller wrapped it, and streams its stdout in lines.
import { rgPath } from '@vscode/ripgrep'
import type { ProcessLauncher, SubprocessService } from '@dsh/subprocess'

/** Absolute path of the ripgrep binary shipped in `@vscode/ripgrep`'s platform package. */
export const RG_PATH: string = rgPath

export interface RgOptions {
  cwd: string
  signal?: AbortSignal
  timeoutMs: number
  /** Called with each complete stdout line (without the newline). Return false to stop parsing;
   *  the remaining lines are then only counted. */
  onLine(line: string): boolean
  /**
   * The confined command to start instead of rg itself (`ctx.sandbox.wrap` of `[RG_PATH, ...argv]`):
   * its argv and, when the runner has one, the launcher of an already running confinement.
   */
  confined?: { argv: readonly string[]; launcher?: ProcessLauncher }
}

export interface RgOutcome {
  /** rg exit code: 0 matches, 1 none, 2 error; null when killed. */
  code: number | null
  /** Lines seen on stdout, parsed or only counted. */
  lines: number
  stderr: string
  timedOut: boolean
  /** The process could not be started at all. */
  spawnError?: string
}

const STDERR_CAP = 16 * 1024

export async function runRg(
  subprocess: SubprocessService,
  argv: readonly string[],
  options: RgOptions,
): Promise<RgOutcome> {
  let lines = 0
  let parsing = true
  let stderr = ''
  let timedOut = false
  let pending: Buffer | undefined

  const countRest = (buffer: Uint8Array, from: number) => {
    for (let at = buffer.indexOf(10, from); at !== -1; at = buffer.indexOf(10, at + 1)) lines++
  }
  const consume = (chunk: Uint8Array) => {
    if (!parsing) return countRest(chunk, 0)
    const buffer = pending
      ? Buffer.concat([pending, chunk])
      : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength)
    pending = undefined
    let start = 0
    for (let at = buffer.indexOf(10); at !== -1; at = buffer.indexOf(10, start)) {
      lines++
      parsing = options.onLine(buffer.toString('utf8', start, at))
      start = at + 1
      if (!parsing) return countRest(buffer, start)
    }
    // Copy the remainder: the provider may reuse the chunk's memory.
    if (start < buffer.length) pending = Buffer.from(buffer.subarray(start))
  }

  const [file, ...args] = options.confined ? options.confined.argv : [RG_PATH, ...argv]
  const handle = subprocess.spawn({
    file: file!,
    args,
    cwd: options.cwd,
    // `--no-config` already ignores it; removing it too keeps the child's view plain.
    env: { set: { RIPGREP_CONFIG_PATH: undefined } },
    kill: { graceMs: 200 },
    signal: options.signal,
    stdin: 'ignore',
    stderr: 'pipe',
    retentionMode: 'none',
    ...(options.confined?.launcher ? { launcher: options.confined.launcher } : {}),
  })
  handle.onOutput((chunk) => {
    if (chunk.stream === 'stdout') consume(chunk.data)
    else if (stderr.length < STDERR_CAP) stderr += Buffer.from(chunk.data).toString('utf8')
  })
  const timer = setTimeout(() => {
    timedOut = true
    handle.signal('SIGKILL')
  }, options.timeoutMs)
  try {
    const exit = await handle.exited
    if (pending) {
      lines++
      if (parsing) options.onLine(pending.toString('utf8'))
    }
    return {
      code: exit.code,
      lines,
      stderr: stderr.slice(0, STDERR_CAP),
      timedOut,
      ...(exit.spawnError ? { spawnError: `${exit.spawnError.code}: ${exit.spawnError.message}` } : {}),
    }
  } finally {
    clearTimeout(timer)
  }
}
