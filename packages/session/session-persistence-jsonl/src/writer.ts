// The open log of a session being written: how its file is opened (O_APPEND, O_DSYNC when fsync is
// on and the platform has it), how the first batch creates it whole, how later batches are
// appended without ever leaving half a batch behind, and the summary each batch extends for the
// listing index row written at close.
import { constants as fsc, promises as fs } from 'node:fs'
import { dirname } from 'node:path'
import type { SessionSummary, StoredRecord, SummaryBuilder } from '@dsh/session-persistence'
import { markCreated, syncDir } from './layout.ts'

export interface OpenLog {
  /** Unset until the first batch creates the log file (a session with no events has none). */
  handle?: fs.FileHandle
  /** The handle was opened O_DSYNC: each write returns durable, no separate fdatasync. */
  dsync?: boolean
  path: string
  compressed: boolean
  /** Byte length of the durable, intact log. */
  size: number
  lockPath: string
  /**
   * The summary of what the log holds, kept up to date by each batch for the listing index:
   * `base` is the summary of the log as opened (undefined for a new session), `more` folds the
   * batches written since. Unset when the opened log's summary was not known (the index row is
   * then left to the next listing).
   */
  tracked?: { base?: SessionSummary; more: SummaryBuilder }
}

/**
 * With fsync on, where the platform has O_DSYNC the log is opened with it: a batch is one
 * `write()` that returns once the data is durable (what write + fdatasync guaranteed), one round
 * trip to the thread pool instead of two on every checkpoint.
 */
export function useDsync(fsync: boolean): boolean {
  return fsync && typeof fsc.O_DSYNC === 'number' && fsc.O_DSYNC !== 0
}

/** The flags a log is opened with for appending. */
export function appendFlags(dsync: boolean): number {
  return fsc.O_RDWR | fsc.O_APPEND | (dsync ? fsc.O_DSYNC : 0)
}

/** Writes the first batch aside, makes it durable, then renames it into place as the log. */
export async function createLog(log: OpenLog, bytes: Uint8Array, fsync: boolean): Promise<void> {
  const tmp = `${log.path}.${process.pid}.tmp`
  const dsync = useDsync(fsync)
  if (dsync) {
    // The temp file is opened as the log will be (append, O_DSYNC): the batch is durable when
    // its write returns, and after the rename the same descriptor is the log's (a rename keeps
    // the file). No separate datasync, close and reopen on the way to the first request.
    let handle: fs.FileHandle | undefined
    try {
      handle = await fs.open(tmp, appendFlags(dsync) | fsc.O_CREAT | fsc.O_TRUNC, 0o600)
      let written = 0
      while (written < bytes.length)
        written += (await handle.write(bytes, written, bytes.length - written)).bytesWritten
      await fs.rename(tmp, log.path)
      await syncDir(dirname(log.path))
      await markCreated(log.path)
    } catch (error) {
      await handle?.close().catch(() => {})
      await fs.rm(tmp, { force: true })
      throw error
    }
    log.handle = handle
    log.dsync = true
    log.size = bytes.length
    return
  }
  try {
    const handle = await fs.open(tmp, 'w', 0o600)
    try {
      await handle.writeFile(bytes)
      if (fsync) await handle.datasync()
    } finally {
      await handle.close()
    }
    await fs.rename(tmp, log.path)
    if (fsync) await syncDir(dirname(log.path))
    await markCreated(log.path)
  } catch (error) {
    await fs.rm(tmp, { force: true })
    throw error
  }
  log.handle = await fs.open(log.path, appendFlags(dsync))
  log.dsync = dsync
  log.size = bytes.length
}

/**
 * Appends one batch to a log whose file exists (`handle`, the log's own). A failed write is truncated back to the last
 * batch boundary, so the next write never follows half a batch.
 */
export async function appendBatch(
  log: OpenLog,
  handle: fs.FileHandle,
  bytes: Uint8Array,
  fsync: boolean,
): Promise<void> {
  try {
    let written = 0
    while (written < bytes.length) {
      const { bytesWritten } = await handle.write(bytes, written, bytes.length - written)
      written += bytesWritten
    }
    if (fsync && !log.dsync) await handle.datasync()
    log.size += bytes.length
  } catch (error) {
    // Leave no half batch behind: the next write must start on a batch boundary.
    await handle.truncate(log.size).catch(() => {})
    throw error
  }
}

/** Folds a written batch into the open log's summary (for the index row written at close). */
export function track(log: OpenLog, records: StoredRecord[]): void {
  if (!log.tracked) return
  for (const record of records) log.tracked.more.add(record.event as never)
}
