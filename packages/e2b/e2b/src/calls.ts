// What the e2b service's calls share: the API key, retries of control-plane calls, the sentences
// for their failures, and the session log of sandbox lifecycle events.
import type { Context } from 'cordis'
import { resolve } from 'node:path'
import { AuthenticationError, RateLimitError, SandboxError, SandboxNotFoundError } from 'e2b'
import type {} from '@dsh/credentials'
import type { Session } from '@dsh/session'
import { CREDENTIAL, E2bError, type SandboxLogEvent, type Slot } from './types.ts'
import { isTransient, sleep } from './util.ts'

/** True when `error` says the sandbox is no longer running (as opposed to a failed call). */
export function isGone(error: unknown): boolean {
  if (error instanceof SandboxNotFoundError) return true
  const message = error instanceof Error ? error.message : String(error)
  return (
    /not running anymore|sandbox .*(was )?not found|sandbox is probably not running|\bunavailable\b|502/i.test(
      message,
    ) && error instanceof SandboxError
  )
}

/**
 * The E2B API key, from the credentials service when loaded (else the environment). A missing or
 * unreadable key is a lasting failure, recorded in `state.fatal`.
 */
export async function readApiKey(state: { credentials?: Context['credentials']; fatal?: E2bError }): Promise<string> {
  let key: string | undefined
  const credentials = state.credentials
  if (credentials) {
    try {
      key = await credentials.get(CREDENTIAL)
    } catch (error) {
      throw (state.fatal = new E2bError('MISSING_KEY', `${CREDENTIAL} could not be read: ${(error as Error).message}`, {
        cause: error,
      }))
    }
  } else key = process.env[CREDENTIAL]
  if (!key) {
    let where = `export ${CREDENTIAL}=... in the environment`
    try {
      const description = await credentials?.describe(CREDENTIAL)
      if (description)
        where = description.layers
          .map((layer) => (layer.id === 'env' ? `export ${CREDENTIAL}=... in the environment` : layer.label))
          .join('; ')
    } catch {
      // the plain hint stands
    }
    throw (state.fatal = new E2bError(
      'MISSING_KEY',
      `the e2b world needs ${CREDENTIAL} (an E2B API key); set it in one of: ${where}`,
    ))
  }
  return key
}

/**
 * One control-plane call, retried `retries` times (doubling waits from `retryDelayMs`) while it
 * fails with a 429 or a 5xx; any other failure, or the last one, is thrown as the SDK gave it.
 * An aborted `signal` (the app stopping) ends the waiting.
 */
export async function retrying<T>(
  call: () => Promise<T>,
  config: { retries: number; retryDelayMs: number },
  signal?: AbortSignal,
): Promise<T> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await call()
    } catch (error) {
      if (!isTransient(error) || attempt >= config.retries || signal?.aborted) throw error
      await sleep(config.retryDelayMs * 2 ** attempt, signal)
    }
  }
}

/** `N tries` for the lines that report a call that kept failing. */
export function tries(error: unknown, retries: number): string {
  return isTransient(error) ? `, ${retries + 1} tries` : ''
}

/** One sentence for an SDK failure. */
export function explain(error: unknown, what: string): E2bError {
  if (error instanceof E2bError) return error
  const first = (error instanceof Error ? error.message : String(error)).split('\n')[0]
  if (error instanceof AuthenticationError)
    return new E2bError('AUTH', `E2B refused ${CREDENTIAL} (${first}); check the key`, { cause: error })
  if (error instanceof RateLimitError)
    return new E2bError('RATE_LIMIT', `E2B is rate limiting: could not ${what} a sandbox (${first})`, {
      cause: error,
    })
  return new E2bError('UNAVAILABLE', `could not ${what} an E2B sandbox: ${first}`, { cause: error })
}

/** Live sessions that are not subagent children (whose first event is their `subagent/link`). */
export function rootSessions(sessions: Context['sessions'] | undefined): Session[] {
  return (sessions?.list() ?? []).filter((session) => session.events[0]?.type !== 'subagent/link')
}

/** Appends to the sessions a slot serves: the child's own for a child's, else every root session. */
export function logEvent(sessions: Context['sessions'] | undefined, slot: Slot, event: SandboxLogEvent): void {
  const link = slot.link
  const targets = link
    ? (sessions?.list() ?? []).filter((session) => {
        const first = session.events[0]
        return (
          first?.type === 'subagent/link' &&
          first.data.id === link.id &&
          first.data.parentSessionId === link.parentSessionId
        )
      })
    : rootSessions(sessions).filter((session) => !slot.dir || resolve(session.cwd) === slot.dir)
  for (const session of targets) {
    try {
      session.append('e2b/sandbox', slot.dir && !link ? { ...event, workspace: slot.dir } : event)
    } catch {
      // a closed session takes no more events
    }
  }
}
