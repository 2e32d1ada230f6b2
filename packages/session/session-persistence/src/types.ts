// Public vocabulary of the durable session-log seam: the header, summaries, load results and errors.
import type { AnySessionEvent, SessionEvent, SessionId } from '@dsh/session'

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
    /** Stable code: NOT_FOUND, EXISTS, LOCKED, CORRUPT, UNKNOWN_EVENT_TYPE, SEQ_GAP, CLOSED, NOT_OPEN, WRITE_FAILED, BAD_HEADER. */
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
