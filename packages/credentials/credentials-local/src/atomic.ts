// Durable replacement of a secret file: temp file created 0600 in the same directory, fsync, rename.
import { randomBytes } from 'node:crypto'
import { open, rename, rm } from 'node:fs/promises'
import { basename, dirname, join } from 'node:path'

export async function writeSecretFile(path: string, text: string): Promise<void> {
  const dir = dirname(path)
  const temp = join(dir, `.${basename(path)}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`)
  const handle = await open(temp, 'wx', 0o600)
  try {
    try {
      // Explicit: the creation mode is filtered by umask, and a wider one must never happen.
      await handle.chmod(0o600)
      await handle.writeFile(text, 'utf8')
      await handle.sync()
    } finally {
      await handle.close()
    }
    await rename(temp, path)
  } catch (error) {
    await rm(temp, { force: true })
    throw error
  }
  let dirHandle
  try {
    dirHandle = await open(dir, 'r')
    await dirHandle.sync()
  } catch {
    // Directory fsync is unsupported on some filesystems; the rename already happened.
  } finally {
    await dirHandle?.close()
  }
}
