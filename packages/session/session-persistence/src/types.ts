// Public vocabulary of the durable session-log seam: the header, summaries, load results and errors.
import type { AnySessionEvent, SessionEvent, SessionId } from '@dsh/session'
import { asSessionId } from '@dsh/session'

declare module '@dsh/session' {
  interface SessionEventMap {
    /**
     * A top-level tool body is about to run (logged and made durable by the checkpoint policy).
     * Crash repair reads it to tell "may have run" from "never started". Not message-producing.
     */
    'tool/started': { callId: string }
  }
}

/** Version of the on-disk header and record format written by this build. */
export const HEADER_VERSION = 1

/** Stored beside each log. Written once, at `create()`. */
export interface SessionHeader {
  version: number
  id: SessionId
  cwd: string
  /** Epoch milliseconds. */
  createdAt: number
  /** Set for a fork: the source session and the seq boundary of the copied prefix. */
  parentSession?: { sessionId: SessionId; boundary: number }
  /** Free-form label of what created the session (`headless`, `acp`, `web`, `fork`, ...). */
  origin?: string
}

/** What `create()` takes: `version` and `createdAt` are filled in when absent. */
export type SessionHeaderInput = Omit<SessionHeader, 'version' | 'createdAt' | 'id'> & {
  id: SessionId | string
  createdAt?: number
}

/** Options of `list()`. */
export interface ListOptions {
  /**
   * Only the sessions whose `cwd` is exactly this. A backend may read less for it (the JSONL store
   * reads only that directory's sessions); the result is the same as filtering the whole list.
   */
  cwd?: string
}

/** One row of `list()`. */
export interface SessionSummary {
  id: SessionId
  cwd: string
  createdAt: number
  /** Time of the last stored event (`createdAt` for an empty log). */
  updatedAt: number
  /** The latest `session/title`, when there is one. */
  title?: string
  /** Text of the first human `user/message`, cut to 200 characters. */
  firstPrompt?: string
  /** Number of `turn/start` events. */
  turns: number
  /** Number of stored events. */
  events: number
  parentSession?: SessionHeader['parentSession']
  origin?: string
  /**
   * Set when the session's log cannot be read (corrupt, empty): why. The row stays listed, and
   * newest-first, so `latest()` names the damaged session instead of skipping to an older one.
   */
  damaged?: string
}

/** One change crash repair made (or, from `inspect()`, would make). */
export type Repair =
  | { kind: 'tool-result'; callId: string; name: string; outcome: 'unknown' | 'not-started' }
  | { kind: 'step-end'; turn: number; step: number }
  | { kind: 'turn-end'; turn: number }

/** A torn tail that was (load) or would be (inspect) cut off. */
export interface TornTail {
  /** Byte offset (or row position for row stores) where the intact log ends. */
  offset: number
  /** Bytes (or rows) dropped. */
  dropped: number
  reason: string
}

export interface LoadedSession {
  header: SessionHeader
  /** The log, contiguous seq from 0, repair events included at the end. */
  events: AnySessionEvent[]
  /** Events appended by crash repair (a suffix of `events`). Empty for a clean log. */
  repairs: Repair[]
  tornTail?: TornTail
  /** Human-readable notes about what load found and did (torn tail, repairs). */
  warnings: string[]
}

/** A record as a backend stores it: the event plus whether older readers may keep it unread. */
export interface StoredRecord {
  event: SessionEvent
  ignorable?: boolean
}

export class SessionPersistenceError extends Error {
  override name = 'SessionPersistenceError'
  constructor(
    /** Stable code: BAD_ID, NOT_FOUND, AMBIGUOUS (an id prefix of several sessions), EXISTS, LOCKED, CORRUPT, UNKNOWN_EVENT_TYPE, SEQ_GAP, CLOSED, NOT_OPEN, WRITE_FAILED, BAD_HEADER. */
    readonly code: string,
    readonly sessionId: string,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options)
  }
}

/** The middle of a log is damaged: refused rather than skipped. */
export class SessionCorruptError extends SessionPersistenceError {
  override name = 'SessionCorruptError'
  constructor(
    sessionId: string,
    /** Byte offset (file backends) or seq (row backends) of the damaged record. */
    readonly offset: number,
    readonly reason: string,
  ) {
    super('CORRUPT', sessionId, `session ${sessionId} is corrupt at offset ${offset}: ${reason}`)
  }
}

export type { AnySessionEvent, SessionEvent, SessionId }

/**
 * What a stored session id may look like: 1-128 ASCII letters, digits, `.`, `_` or `-`, starting
 * with a letter or digit. No separators and no `.`/`..`, so an id is always one path segment.
 */
export const SESSION_ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/

export function isValidSessionId(value: unknown): value is SessionId {
  return typeof value === 'string' && SESSION_ID_PATTERN.test(value)
}

/**
 * The one gate every id passes before it reaches a path or a query: returns it branded, or throws
 * `SessionPersistenceError` with code `BAD_ID` (`where` prefixes the message, e.g. `create`).
 */
export function parseSessionId(value: unknown, where?: string): SessionId {
  if (isValidSessionId(value)) return asSessionId(value)
  const shown =
    typeof value === 'string' ? JSON.stringify(value.length > 80 ? `${value.slice(0, 77)}...` : value) : String(value)
  throw new SessionPersistenceError(
    'BAD_ID',
    typeof value === 'string' ? value : '',
    `${where ? `${where}: ` : ''}invalid session id ${shown}: an id is 1-128 letters, digits, ".", "_" or "-", starting with a letter or digit`,
  )
}

/** `NOT_FOUND` for a session id no backend holds; the one wording every backend uses. */
export function sessionNotFound(id: string): SessionPersistenceError {
  return new SessionPersistenceError('NOT_FOUND', id, `no stored session ${id}`)
}

/** Whether a writer-lock holder's pid is alive on this host (EPERM: alive, not ours to signal). */
export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM'
  }
}
