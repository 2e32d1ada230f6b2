// The writer lock of one session directory (`writer.lock`, created O_EXCL): one writer per session
// across processes and hosts. A lock left by a dead process on this host is taken over.
import { promises as fs } from 'node:fs'
import { hostname } from 'node:os'
import { join } from 'node:path'
import { SessionPersistenceError, processAlive } from '@dsh/session-persistence'
import { LOCK_FILE } from './layout.ts'

/**
 * Takes `writer.lock` in `dir` (O_EXCL) and returns its path. A lock left by a dead process on this
 * host is taken over; a live holder (including this process) or a holder on another host makes it
 * `LOCKED`.
 */
export async function takeWriterLock(id: string, dir: string): Promise<string> {
  const path = join(dir, LOCK_FILE)
  const mine = JSON.stringify({ pid: process.pid, host: hostname(), since: Date.now() }) + '\n'
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      await fs.writeFile(path, mine, { flag: 'wx', mode: 0o600 })
      return path
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error
    }
    let holder: { pid?: number; host?: string } = {}
    try {
      holder = JSON.parse(await fs.readFile(path, 'utf8')) ?? {}
    } catch {
      // An empty or torn lock file was left by a writer that died while taking it.
    }
    if (holder.host !== undefined && holder.host !== hostname()) {
      throw new SessionPersistenceError(
        'LOCKED',
        id,
        `session ${id} is open for writing on host ${holder.host} (pid ${holder.pid}); remove ${path} if that process is gone`,
      )
    }
    if (typeof holder.pid === 'number' && processAlive(holder.pid)) {
      throw new SessionPersistenceError(
        'LOCKED',
        id,
        `session ${id} is open for writing by process ${holder.pid}${holder.pid === process.pid ? ' (this process)' : ''}`,
      )
    }
    await fs.rm(path, { force: true })
  }
  throw new SessionPersistenceError('LOCKED', id, `session ${id}: could not take ${path}`)
}
