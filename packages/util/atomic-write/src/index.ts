// @dsh/atomic-write: durable file replacement and a cross-process writer lock beside the target
// file. Zero dependencies beyond node:fs; shared by every package that rewrites a user's file.
import { randomBytes } from 'node:crypto'
import { type FileHandle, open, rename, rm, stat, writeFile } from 'node:fs/promises'
import { basename, dirname, join } from 'node:path'

/**
 * Replaces `path` with `text` so a reader sees the old or the new content, never a mix: a temp
 * file in the same directory, fsync, rename over the target, fsync of the directory. `mode` is
 * applied explicitly (so umask cannot widen or narrow it) when given; otherwise the file is
 * created with the process umask.
 */
export async function writeAtomic(path: string, text: string | Uint8Array, mode?: number): Promise<void> {
  const dir = dirname(path)
  const temp = join(dir, `.${basename(path)}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`)
  const handle = await open(temp, 'wx', mode ?? 0o666)
  try {
    try {
      await handle.writeFile(text)
      if (mode !== undefined) await handle.chmod(mode)
      await handle.sync()
    } finally {
      await handle.close()
    }
    await rename(temp, path)
  } catch (error) {
    await rm(temp, { force: true })
    throw error
  }
  await syncDirectory(dir)
}

async function syncDirectory(dir: string): Promise<void> {
  let handle: FileHandle | undefined
  try {
    handle = await open(dir, 'r')
    await handle.sync()
  } catch {
    // Some filesystems refuse fsync on a directory; the rename itself already happened.
  } finally {
    await handle?.close()
  }
}

export interface LockOptions {
  timeoutMs: number
  /** A lock file older than this is presumed left by a crashed writer and removed. */
  staleMs: number
}

const delay = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/** Runs `body` while holding `<path>.lock` (created exclusively); other processes wait for it. */
export async function withFileLock<T>(path: string, options: LockOptions, body: () => Promise<T>): Promise<T> {
  const lock = `${path}.lock`
  const deadline = Date.now() + options.timeoutMs
  for (let attempt = 0; ; attempt++) {
    try {
      await writeFile(lock, `${process.pid}\n`, { flag: 'wx' })
      break
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error
      const info = await stat(lock).catch(() => undefined)
      if (info && Date.now() - info.mtimeMs > options.staleMs) {
        await rm(lock, { force: true })
        continue
      }
      if (Date.now() >= deadline) {
        throw Object.assign(
          new Error(
            `timed out after ${options.timeoutMs}ms waiting for the writer lock ${lock} (remove it if no dsh process is writing)`,
          ),
          { code: 'LOCK_TIMEOUT' },
        )
      }
      await delay(Math.min(5 * 2 ** Math.min(attempt, 4), 50))
    }
  }
  try {
    return await body()
  } finally {
    await rm(lock, { force: true })
  }
}
