// Claude Code hook configuration: the `hooks` key of its settings files (or a row's `hooks`),
// `{ <Event>: [ { matcher?, hooks: [ { type: 'command', command, timeout? (s) } ] } ] }`.
// Entries are checked one by one; a bad one is a problem sentence, never an exception.
import { readFileSync } from 'node:fs'

export const SUPPORTED_EVENTS = [
  'PreToolUse',
  'PostToolUse',
  'UserPromptSubmit',
  'Stop',
  'SubagentStop',
  'SessionStart',
  'SessionEnd',
  'PreCompact',
  'Notification',
] as const
export type SupportedEvent = (typeof SUPPORTED_EVENTS)[number]

/** Events of the Claude Code vocabulary this bridge does not run yet (reported once, skipped). */
export const UNSUPPORTED_EVENTS = ['PostCompact', 'PermissionRequest'] as const

export interface HookEntry {
  event: SupportedEvent
  matcher?: string
  command: string
  /** Milliseconds. */
  timeoutMs: number
  /** A settings file path, or `config`. */
  origin: string
}

const isRecord = (value: unknown): value is Record<string, unknown> =>
  value !== null && typeof value === 'object' && !Array.isArray(value)

/** Reads the `hooks` key of one settings file. Missing file: nothing; unreadable or bad JSON: a problem. */
export function readSettingsHooks(path: string): { hooks?: unknown; problem?: string } {
  let text: string
  try {
    text = readFileSync(path, 'utf8')
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code
    if (code === 'ENOENT' || code === 'ENOTDIR') return {}
    return { problem: `${path}: cannot read (${code ?? String(error)})` }
  }
  let parsed: unknown
  try {
    parsed = JSON.parse(text)
  } catch (error) {
    return { problem: `${path}: not valid JSON (${(error as Error).message})` }
  }
  if (!isRecord(parsed)) return { problem: `${path}: expected a JSON object` }
  return { hooks: parsed.hooks }
}

/** Flattens a `hooks` table into entries; every unusable part is one problem naming where it is. */
export function checkHooks(
  table: unknown,
  origin: string,
  defaultTimeoutMs: number,
): { entries: HookEntry[]; problems: string[] } {
  const entries: HookEntry[] = []
  const problems: string[] = []
  if (table === undefined || table === null) return { entries, problems }
  if (!isRecord(table)) return { entries, problems: [`${origin}: "hooks" must be an object of events`] }
  for (const [event, groups] of Object.entries(table)) {
    if (!(SUPPORTED_EVENTS as readonly string[]).includes(event)) {
      problems.push(
        (UNSUPPORTED_EVENTS as readonly string[]).includes(event)
          ? `${origin}: ${event} hooks are not run by dsh yet; skipped`
          : `${origin}: unknown hook event ${JSON.stringify(event)} (known: ${[...SUPPORTED_EVENTS, ...UNSUPPORTED_EVENTS].join(', ')}); skipped`,
      )
      continue
    }
    if (!Array.isArray(groups)) {
      problems.push(`${origin}: hooks.${event} must be a list of {matcher, hooks}`)
      continue
    }
    groups.forEach((group, i) => {
      const where = `${origin}: hooks.${event}[${i}]`
      if (!isRecord(group)) {
        problems.push(`${where} must be an object with "hooks"`)
        return
      }
      if (group.matcher !== undefined && typeof group.matcher !== 'string') {
        problems.push(`${where}.matcher must be a string`)
        return
      }
      if (!Array.isArray(group.hooks)) {
        problems.push(`${where}.hooks must be a list of {type: "command", command}`)
        return
      }
      group.hooks.forEach((hook, j) => {
        const at = `${where}.hooks[${j}]`
        if (!isRecord(hook)) {
          problems.push(`${at} must be an object`)
          return
        }
        if (hook.type !== 'command') {
          problems.push(`${at}: only type "command" is supported, not ${JSON.stringify(hook.type)}`)
          return
        }
        if (typeof hook.command !== 'string' || hook.command.trim() === '') {
          problems.push(`${at}.command must be a non-empty string`)
          return
        }
        if (hook.timeout !== undefined && (typeof hook.timeout !== 'number' || !(hook.timeout > 0))) {
          problems.push(`${at}.timeout must be a positive number of seconds`)
          return
        }
        entries.push({
          event: event as SupportedEvent,
          ...(group.matcher !== undefined ? { matcher: group.matcher as string } : {}),
          command: hook.command,
          timeoutMs: hook.timeout !== undefined ? Math.round((hook.timeout as number) * 1000) : defaultTimeoutMs,
          origin,
        })
      })
    })
  }
  return { entries, problems }
}
