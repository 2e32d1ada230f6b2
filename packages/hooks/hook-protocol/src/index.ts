// @dsh/hook-protocol: the dialect-free half of running users' hook scripts. A hook is a shell
// command that gets one JSON object on stdin and answers with its exit code, stdout and stderr:
// exit 0 succeeds (stdout may be a JSON object of fields), exit 2 blocks (stderr says why), any
// other exit is a non-blocking error. This package runs a hook through `ctx.subprocess`, decodes
// that answer, matches tool names, merges decisions, and logs every run as a `hook/run` session
// event. Dialects (`@dsh/hooks-claude-code`, ...) own the payload shapes and what a field means.
import type { Context } from 'cordis'
import type { Session } from '@dsh/session'
import type { SubprocessService } from '@dsh/subprocess'
import type {} from '@dsh/session-persistence'

/** One logged hook run. Not model-visible by itself; what a hook adds to a request is logged where it lands. */
export interface HookRunRecord {
  dialect: string
  /** The dialect's event name, e.g. `PreToolUse`. */
  event: string
  command: string
  matcher?: string
  toolName?: string
  /** Where the hook was declared (a settings file path, or `config`). */
  origin: string
  /** The stdin payload; omitted (with `inputBytes`) when over 16 KiB. */
  input?: { [key: string]: unknown }
  inputBytes: number
  exitCode: number | null
  durationMs: number
  /** What the run amounted to. */
  outcome: HookOutcomeKind
  /** The message the outcome carries (a block reason, an error), bounded. */
  message?: string
}

declare module '@dsh/session' {
  interface SessionEventMap {
    'hook/run': HookRunRecord
  }
}

export type HookOutcomeKind = 'ok' | 'block' | 'error' | 'timeout'

/** A finished hook process. */
export interface HookProcessResult {
  exitCode: number | null
  signal: string | null
  stdout: string
  stderr: string
  durationMs: number
  timedOut: boolean
  /** The command could not be started at all. */
  spawnError?: string
}

/** The decoded answer of a hook. */
export type HookOutcome =
  | { kind: 'ok'; stdout: string; json?: { [key: string]: unknown } }
  | { kind: 'block'; message: string }
  | { kind: 'error'; message: string }
  | { kind: 'timeout'; message: string }

export interface RunHookOptions {
  command: string
  cwd: string
  /** Extra environment for the hook (trusted, on top of the scrubbed inherited environment). */
  env?: Record<string, string>
  input: unknown
  timeoutMs: number
  signal?: AbortSignal
  /** Most bytes kept of stdout and of stderr each. */
  maxOutputBytes?: number
}

const DEFAULT_MAX_OUTPUT = 256 * 1024
const MAX_LOGGED_INPUT = 16 * 1024
const MAX_MESSAGE = 2000

/** Runs `command` with `/bin/sh -c`, writes `input` as JSON to its stdin, and collects its answer. Never rejects. */
export async function runHookCommand(
  subprocess: SubprocessService,
  options: RunHookOptions,
): Promise<HookProcessResult> {
  const started = Date.now()
  const max = options.maxOutputBytes ?? DEFAULT_MAX_OUTPUT
  const controller = new AbortController()
  let timedOut = false
  const timer = setTimeout(() => {
    timedOut = true
    controller.abort()
  }, options.timeoutMs)
  const outer = options.signal
  const follow = () => controller.abort()
  if (outer?.aborted) follow()
  else outer?.addEventListener('abort', follow, { once: true })
  const chunks = { stdout: [] as Buffer[], stderr: [] as Buffer[] }
  const sizes = { stdout: 0, stderr: 0 }
  try {
    const handle = subprocess.spawn({
      file: '/bin/sh',
      args: ['-c', options.command],
      cwd: options.cwd,
      env: { set: options.env ?? {} },
      stdin: 'pipe',
      retentionMode: 'none',
      kill: { graceMs: 1000 },
      signal: controller.signal,
    })
    handle.onOutput((chunk) => {
      const stream = chunk.stream === 'stderr' ? 'stderr' : 'stdout'
      if (sizes[stream] >= max) return
      const data = Buffer.from(chunk.data).subarray(0, max - sizes[stream])
      sizes[stream] += data.byteLength
      chunks[stream].push(data)
    })
    try {
      handle.write(JSON.stringify(options.input ?? {}))
      handle.closeStdin()
    } catch {
      // A hook that exits without reading its stdin is fine.
    }
    const exit = await handle.exited
    return {
      exitCode: exit.code,
      signal: exit.signal,
      stdout: Buffer.concat(chunks.stdout).toString('utf8'),
      stderr: Buffer.concat(chunks.stderr).toString('utf8'),
      durationMs: Date.now() - started,
      timedOut,
      ...(exit.spawnError ? { spawnError: `${exit.spawnError.code}: ${exit.spawnError.message}` } : {}),
    }
  } catch (error) {
    return {
      exitCode: null,
      signal: null,
      stdout: '',
      stderr: '',
      durationMs: Date.now() - started,
      timedOut,
      spawnError: (error as Error).message,
    }
  } finally {
    clearTimeout(timer)
    outer?.removeEventListener('abort', follow)
  }
}

const bounded = (text: string) => (text.length > MAX_MESSAGE ? `${text.slice(0, MAX_MESSAGE - 3)}...` : text)

/**
 * The exit-code / stdout codec: 0 is success (stdout parsed as a JSON object when it is one),
 * 2 blocks with stderr as the reason, a timeout or any other exit is a non-blocking error.
 */
export function decodeOutcome(result: HookProcessResult, timeoutMs: number): HookOutcome {
  if (result.spawnError) return { kind: 'error', message: `the hook could not start (${result.spawnError})` }
  if (result.timedOut)
    return { kind: 'timeout', message: `the hook did not finish within ${timeoutMs / 1000} s and was stopped` }
  if (result.exitCode === 0) {
    const text = result.stdout.trim()
    if (text.startsWith('{')) {
      try {
        const json = JSON.parse(text) as unknown
        if (json !== null && typeof json === 'object' && !Array.isArray(json))
          return { kind: 'ok', stdout: result.stdout, json: json as { [key: string]: unknown } }
      } catch {
        // Not JSON after all: plain output.
      }
    }
    return { kind: 'ok', stdout: result.stdout }
  }
  if (result.exitCode === 2) {
    const reason = result.stderr.trim() || result.stdout.trim() || 'blocked by a hook (exit code 2, no message)'
    return { kind: 'block', message: bounded(reason) }
  }
  const how =
    result.exitCode === null ? `was killed by ${result.signal ?? 'a signal'}` : `exited with code ${result.exitCode}`
  const detail = result.stderr.trim().split('\n').at(-1)
  return { kind: 'error', message: bounded(`the hook ${how}${detail ? `: ${detail}` : ''}`) }
}

/**
 * Whether a matcher selects `name`: empty, absent or `*` select everything; otherwise the matcher
 * is a regular expression that must match the whole name (`Edit|Write`, `mcp__.*`). A matcher
 * that is not a valid expression matches only itself, literally.
 */
export function matches(matcher: string | undefined, name: string): boolean {
  if (matcher === undefined || matcher === '' || matcher === '*') return true
  try {
    return new RegExp(`^(?:${matcher})$`).test(name)
  } catch {
    return matcher === name
  }
}

export type PermissionDecision = 'allow' | 'ask' | 'deny'

/** The most restrictive of several decisions (deny > ask > allow); undefined when none was made. */
export function mostRestrictive(decisions: (PermissionDecision | undefined)[]): PermissionDecision | undefined {
  if (decisions.includes('deny')) return 'deny'
  if (decisions.includes('ask')) return 'ask'
  if (decisions.includes('allow')) return 'allow'
  return undefined
}

/** Registers `hook/run` with persistence (when mounted), so logs holding hook runs reload. */
export function registerHookEvents(ctx: Context): void {
  ctx.inject(['sessionPersistence'], (inner) => {
    inner.sessionPersistence.registerEventType('hook/run')
  })
}

/** Appends a `hook/run` record to `session` (the input is dropped when large). Never throws. */
export function logHookRun(
  ctx: Context,
  session: Session | undefined,
  record: Omit<HookRunRecord, 'input' | 'inputBytes' | 'outcome' | 'message' | 'exitCode' | 'durationMs'> & {
    input: unknown
    result: HookProcessResult
    outcome: HookOutcome
  },
): void {
  const json = JSON.stringify(record.input ?? {})
  const bytes = Buffer.byteLength(json)
  const message = record.outcome.kind === 'ok' ? undefined : record.outcome.message
  const entry: HookRunRecord = {
    dialect: record.dialect,
    event: record.event,
    command: record.command,
    ...(record.matcher !== undefined ? { matcher: record.matcher } : {}),
    ...(record.toolName !== undefined ? { toolName: record.toolName } : {}),
    origin: record.origin,
    ...(bytes <= MAX_LOGGED_INPUT ? { input: JSON.parse(json) as { [key: string]: unknown } } : {}),
    inputBytes: bytes,
    exitCode: record.result.exitCode,
    durationMs: record.result.durationMs,
    outcome: record.outcome.kind,
    ...(message !== undefined ? { message } : {}),
  }
  if (record.outcome.kind === 'error' || record.outcome.kind === 'timeout') {
    ctx
      .logger('hooks')
      .warn('%s hook %s (%s): %s', record.event, JSON.stringify(record.command), record.origin, message)
  }
  if (!session) return
  try {
    session.append('hook/run', entry)
  } catch (error) {
    ctx.logger('hooks').warn('could not log a hook run in session %s: %s', session.id, (error as Error).message)
  }
}
