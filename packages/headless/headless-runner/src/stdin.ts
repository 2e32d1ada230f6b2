// The task from stdin: read when it is not a terminal, with a grace period for a parent that
// left an open pipe it never writes, and a way out for a stop that arrives while waiting.
import { fstatSync, readFileSync, type Stats } from 'node:fs'
import { UsageError } from './args.ts'

/** How long a task-given run waits for the first byte of a non-terminal stdin before ignoring it. */
export const STDIN_GRACE_MS = 3000
/** Ends a stdin read still waiting (set while one is): the app is stopping. */
let abandonRead: (() => void) | undefined
/** Set when a stop abandoned the read: the empty task it leaves is not a usage error to report. */
let readAbandoned = false

/** Ends a stdin read that is still waiting (the app is stopping). */
export function abandonStdinRead(): void {
  abandonRead?.()
}

/** Whether the last read was ended by a stop (its empty task is then not a usage error to report). */
export function stdinReadAbandoned(): boolean {
  return readAbandoned
}

/**
 * Reads stdin when it is not a terminal. `untilEnd`: wait for EOF however long it takes (stdin
 * is the task); otherwise a pipe that sends nothing within `graceMs` is ignored (a parent that
 * spawned us with an open stdin it never writes). Undefined when there is nothing to read.
 */
export async function readPipedStdin(
  untilEnd: boolean,
  graceMs = STDIN_GRACE_MS,
  explicit = false,
): Promise<string | undefined> {
  readAbandoned = false
  const stdin = process.stdin
  // A terminal is read only when asked for by name (the task "-"): type it, then end with ^D.
  if (stdin.isTTY) return explicit ? readFileSync(0, 'utf8') : undefined
  let stat: Stats
  try {
    stat = fstatSync(0)
  } catch {
    return undefined // stdin closed
  }
  if (stat.isFile()) return readFileSync(0, 'utf8')
  if (stat.isCharacterDevice()) return undefined // /dev/null and friends
  return new Promise((resolve) => {
    let text = ''
    let timer: NodeJS.Timeout | undefined
    const finish = (value: string | undefined) => {
      if (timer) clearTimeout(timer)
      abandonRead = undefined
      stdin.off('data', onData).off('end', onEnd).off('error', onError)
      stdin.pause()
      if (value === undefined) stdin.destroy()
      resolve(value)
    }
    const onData = (chunk: string) => {
      text += chunk
      if (timer) {
        clearTimeout(timer)
        timer = undefined
      }
    }
    const onEnd = () => finish(text)
    const onError = () => finish(text || undefined)
    stdin.setEncoding('utf8').on('data', onData).on('end', onEnd).on('error', onError)
    if (!untilEnd) timer = setTimeout(() => finish(undefined), graceMs)
    // A signal while waiting for a piped task: the open pipe must not keep the process up.
    abandonRead = () => {
      readAbandoned = true
      finish(undefined)
    }
  })
}

/**
 * The final task: `-` is replaced by stdin; a missing task is read from a piped stdin; piped
 * stdin next to a task is appended to it after a blank line. Throws UsageError when it is empty.
 */
export async function completeTask(
  task: string,
  read: (untilEnd: boolean, explicit: boolean) => Promise<string | undefined> = (untilEnd, explicit) =>
    readPipedStdin(untilEnd, STDIN_GRACE_MS, explicit),
): Promise<string> {
  let full = task
  if (task === '-' || task === '') {
    full = (await read(true, task === '-')) ?? ''
  } else {
    const piped = await read(false, false)
    if (piped !== undefined && piped.trim() !== '') full = `${task}\n\n${piped.replace(/\s+$/, '')}`
  }
  if (full.trim() === '') throw new UsageError('no task given: dsh -p "what to do" (or pipe it on stdin)')
  return full
}
