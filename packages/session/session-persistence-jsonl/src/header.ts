// Reading what a session directory says about itself: its `header.json`, and whether a log that
// was created is gone. Both turn damage into errors that name the session and the file, never into
// "not found" or an empty session.
import { promises as fs } from 'node:fs'
import { join } from 'node:path'
import type { SessionId } from '@dsh/session'
import {
  SessionCorruptError,
  SessionPersistenceError,
  parseHeader,
  type SessionHeader,
  sessionNotFound,
} from '@dsh/session-persistence'
import { CREATED_FILE, HEADER_FILE, LOG_RAW, LOG_ZSTD, anyExists } from './layout.ts'

/**
 * The session's header. A header that is missing while the log (or its marker) remains, not
 * JSON, or not a valid header is `BAD_HEADER` naming the file: damage, never "not found".
 */
export async function readHeader(id: SessionId, dir: string): Promise<SessionHeader> {
  const path = join(dir, HEADER_FILE)
  let text: string
  try {
    text = await fs.readFile(path, 'utf8')
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error
    if (await anyExists(dir, [LOG_ZSTD, LOG_RAW, CREATED_FILE])) {
      throw new SessionPersistenceError('BAD_HEADER', id, `session ${id}: ${path} is missing while its log remains`)
    }
    throw sessionNotFound(id)
  }
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch {
    throw new SessionPersistenceError('BAD_HEADER', id, `session ${id}: ${path} is not valid JSON`)
  }
  try {
    return parseHeader(id, value)
  } catch (error) {
    if (!(error instanceof SessionPersistenceError)) throw error
    throw new SessionPersistenceError('BAD_HEADER', id, `${error.message} (${path})`)
  }
}

/**
 * The damage of a session directory whose log was created (its marker is there) and is gone;
 * undefined when no log was ever created.
 */
export async function missingLog(id: SessionId, dir: string): Promise<SessionCorruptError | undefined> {
  let file: string
  try {
    file = (await fs.readFile(join(dir, CREATED_FILE), 'utf8')).trim()
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined
    throw error
  }
  const name = file === LOG_RAW || file === LOG_ZSTD ? file : LOG_ZSTD
  return new SessionCorruptError(
    id,
    0,
    `the log ${join(dir, name)} is missing (${join(dir, CREATED_FILE)} records that it was written): its events are lost`,
  )
}
