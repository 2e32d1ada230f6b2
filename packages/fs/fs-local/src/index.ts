// @dsh/fs-local: the host-filesystem provider of `ctx.fs`.
//
// Atomic write: a temp file in the target's directory (same filesystem, so rename is atomic),
// written in chunks, fsynced, given the final mode, renamed over the target, then the directory is
// fsynced so the rename itself survives a power loss. A crash at any point leaves the target with
// its old bytes or its new bytes; at worst a `.<name>.<random>.dsh-tmp` file stays behind.
import { randomBytes } from 'node:crypto'
import { constants, promises as fsp } from 'node:fs'
import { basename, dirname, join } from 'node:path'
import type { Context } from 'cordis'
import Schema from 'schemastery'
import { FileSystem, type CommitOptions, type DirEntry, type FileKind, type FileStat } from '@dsh/fs'

export interface LocalFileSystemConfig {
  /** fsync the temp file and the directory on every write (crash durability). */
  durable: boolean
  /** Bytes per write(2) call while filling the temp file. */
  chunkBytes: number
}

/** Suffix of in-flight temp files; a file ending in it was never a committed target. */
export const TEMP_SUFFIX = '.dsh-tmp'

export class LocalFileSystem extends FileSystem {
  static Config: Schema<Partial<LocalFileSystemConfig>, LocalFileSystemConfig> = Schema.object({
    durable: Schema.boolean()
      .default(true)
      .description('fsync the temp file before the rename and the directory after it.'),
    chunkBytes: Schema.natural()
      .min(4096)
      .default(1 << 20)
      .description('Bytes per write call while filling the temp file.'),
  })

  readonly config: LocalFileSystemConfig

  constructor(ctx: Context, config: LocalFileSystemConfig) {
    super(ctx)
    this.config = config
  }

  protected async statPath(path: string): Promise<FileStat | undefined> {
    try {
      return toStat(await fsp.stat(path))
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined
      throw error
    }
  }

  protected async readBytes(path: string, signal?: AbortSignal): Promise<Uint8Array> {
    const buffer = await fsp.readFile(path, signal ? { signal } : {})
    return new Uint8Array(buffer.buffer, buffer.byteOffset, buffer.byteLength)
  }

  protected async commitBytes(path: string, data: Uint8Array, options: CommitOptions): Promise<FileStat> {
    // Write through a symlink to its target, so the link itself survives the rename.
    const target = await realTarget(path)
    const dir = dirname(target)
    if (options.createParents) await fsp.mkdir(dir, { recursive: true })
    const temp = join(dir, `.${basename(target)}.${randomBytes(6).toString('hex')}${TEMP_SUFFIX}`)
    const mode = options.mode ?? 0o666
    const handle = await fsp.open(temp, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL, mode)
    let committed = false
    try {
      try {
        for (let offset = 0; offset < data.byteLength; ) {
          options.signal?.throwIfAborted()
          const end = Math.min(offset + this.config.chunkBytes, data.byteLength)
          const { bytesWritten } = await handle.write(data, offset, end - offset)
          offset += bytesWritten
        }
        // open() applies the umask; an existing file's mode is restored exactly.
        if (options.mode !== undefined) await handle.chmod(options.mode)
        if (this.config.durable) await handle.sync()
      } finally {
        await handle.close()
      }
      await fsp.rename(temp, target)
      committed = true
    } finally {
      if (!committed) await fsp.rm(temp, { force: true }).catch(() => {})
    }
    if (this.config.durable) await syncDirectory(dir)
    return toStat(await fsp.stat(target))
  }

  protected async listDir(path: string): Promise<DirEntry[]> {
    const entries = await fsp.readdir(path, { withFileTypes: true })
    return entries.map((entry) => ({
      name: entry.name,
      kind: entry.isFile() ? 'file' : entry.isDirectory() ? 'directory' : entry.isSymbolicLink() ? 'symlink' : 'other',
    }))
  }

  protected async makeDir(path: string, recursive: boolean): Promise<void> {
    await fsp.mkdir(path, { recursive })
  }

  protected async removePath(path: string, recursive: boolean): Promise<void> {
    const stat = await fsp.lstat(path)
    if (stat.isDirectory()) {
      if (recursive) await fsp.rm(path, { recursive: true })
      else await fsp.rmdir(path)
    } else await fsp.unlink(path)
  }
}

function toStat(stat: import('node:fs').Stats): FileStat {
  const kind: FileKind = stat.isFile()
    ? 'file'
    : stat.isDirectory()
      ? 'directory'
      : stat.isSymbolicLink()
        ? 'symlink'
        : 'other'
  return { kind, size: stat.size, mtimeMs: stat.mtimeMs, mode: stat.mode & 0o7777 }
}

async function realTarget(path: string): Promise<string> {
  try {
    return await fsp.realpath(path)
  } catch {
    return path
  }
}

async function syncDirectory(dir: string): Promise<void> {
  let handle: import('node:fs/promises').FileHandle | undefined
  try {
    handle = await fsp.open(dir, constants.O_RDONLY)
    await handle.sync()
  } catch (error) {
    // Some filesystems refuse fsync on a directory; the rename has happened regardless.
    const code = (error as NodeJS.ErrnoException).code
    if (code !== 'EINVAL' && code !== 'EISDIR' && code !== 'EPERM' && code !== 'EBADF') throw error
  } finally {
    await handle?.close()
  }
}

export const name = 'fs-local'
export default LocalFileSystem
