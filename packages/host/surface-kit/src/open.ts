// Open-or-resume: a session id a client names, found in memory or resumed from persistence, and the
// stored session `--continue` picks. The faces map `SessionOpenError` codes onto their own errors.
import { CodedError } from '@dsh/brand'
import type { Session } from '@dsh/session'
import type { DurableSessions, ResumeResult, SessionSummary } from '@dsh/session-persistence'

/**
 * Why a session could not be opened: `NO_PERSISTENCE` (no durable-sessions row), `NOT_FOUND`,
 * `BAD_ID` (not a session id), `LOCKED` (another process writes its log), `FAILED` (anything else,
 * the store's sentence in `detail`).
 */
export type SessionOpenCode = 'NO_PERSISTENCE' | 'NOT_FOUND' | 'BAD_ID' | 'LOCKED' | 'FAILED'

export class SessionOpenError extends CodedError<SessionOpenCode> {
  override name = 'SessionOpenError'
  constructor(
    code: SessionOpenCode,
    readonly sessionId: string,
    /** The store's own sentence (or this kit's, for `NO_PERSISTENCE`). */
    readonly detail: string,
    readonly storeCode?: string,
  ) {
    super(code, detail)
  }
}

const STORE_CODES = new Set<SessionOpenCode>(['NOT_FOUND', 'BAD_ID', 'LOCKED'])

/** A resume failure as a `SessionOpenError` (by the store error's `code`). */
export function sessionOpenError(sessionId: string, error: unknown): SessionOpenError {
  if (error instanceof SessionOpenError) return error
  const storeCode = (error as { code?: unknown } | undefined)?.code
  const message = (error as Error | undefined)?.message ?? String(error)
  const code =
    typeof storeCode === 'string' && STORE_CODES.has(storeCode as SessionOpenCode)
      ? (storeCode as SessionOpenCode)
      : 'FAILED'
  return new SessionOpenError(code, sessionId, message, typeof storeCode === 'string' ? storeCode : undefined)
}

/** Resumes a stored session; every failure is a `SessionOpenError`. */
export async function resumeStored(
  durable: Pick<DurableSessions, 'resume'> | undefined,
  sessionId: string,
): Promise<ResumeResult> {
  if (!durable) throw new SessionOpenError('NO_PERSISTENCE', sessionId, 'no session-persistence row is mounted')
  try {
    return await durable.resume(sessionId)
  } catch (error) {
    throw sessionOpenError(sessionId, error)
  }
}

/**
 * The session `sessionId` names: the one in memory (`sessions.get`) when there is one, else the
 * stored one, resumed. Failures as `resumeStored`.
 */
export async function openSession(
  sessions: { get(id: string): Session | undefined },
  durable: Pick<DurableSessions, 'resume'> | undefined,
  sessionId: string,
): Promise<Session> {
  return sessions.get(sessionId) ?? (await resumeStored(durable, sessionId)).session
}

/**
 * A stored session worth offering to continue: it ran a turn, or it is damaged (so `--continue`
 * names it instead of silently skipping to an older one); not one derived from another session
 * (a subagent's child log names its parent).
 */
export const continuable = (row: Pick<SessionSummary, 'turns' | 'damaged' | 'parentSession'>): boolean =>
  (row.turns > 0 || row.damaged !== undefined) && row.parentSession === undefined

/** What `--continue` opens: the newest continuable stored session of `cwd` (rows newest first). */
export function latestContinuable<R extends Pick<SessionSummary, 'cwd' | 'turns' | 'damaged' | 'parentSession'>>(
  rows: readonly R[],
  cwd: string,
): R | undefined {
  return rows.find((row) => row.cwd === cwd && continuable(row))
}
