// @dsh/fs-e2b: the `ctx.fs` provider served from the run's E2B sandbox (`ctx.e2b`), so the file
// tools read and write the same remote tree the sandbox's commands see. The base class keeps the
// contract (path resolution, per-path lock, the `fs/before-write` gate, `fs/read`/`fs/wrote`);
// this provider maps the primitives onto the SDK's filesystem API.
import { randomBytes } from 'node:crypto'
import { basename, dirname, posix } from 'node:path'
import type { Context } from 'cordis'
import { FileSystem, type CommitOptions, type DirEntry, type FileKind, type FileStat } from '@dsh/fs'
import { FileNotFoundError, NotFoundError, InvalidArgumentError, quote, type E2bService, type Sandbox } from '@dsh/e2b'

/** Suffix of in-flight temp files, as with fs-local. */
export const TEMP_SUFFIX = '.dsh-tmp'

/** An error the base class maps to an FsError by its errno-style code. */
function errno(code: string, message: string, cause?: unknown): Error {
  return Object.assign(new Error(message, cause === undefined ? undefined : { cause }), { code })
}

interface EntryInfo {
  name: string
  type?: string
  size: number
  mode: number
  modifiedTime?: Date
  symlinkTarget?: string
}

export class E2bFileSystem extends FileSystem {
  static inject = ['e2b']
  private readonly owner: E2bService

  constructor(ctx: Context) {
    super(ctx)
    this.owner = ctx.e2b
  }

  /** Runs one SDK call against the sandbox, mapping its failures to errno-style errors. */
  private async call<T>(path: string, work: (sandbox: Sandbox) => Promise<T>): Promise<T> {
    const sandbox = await this.owner.sandbox().catch((error: unknown) => {
      throw errno('EIO', (error as Error).message, error)
    })
    try {
      return await work(sandbox)
    } catch (error) {
      if (error instanceof FileNotFoundError || error instanceof NotFoundError)
        throw errno('ENOENT', `${path} does not exist`, error)
      if (this.owner.isGone(error)) throw errno('EIO', this.owner.lost(sandbox, error), error)
      const message = error instanceof Error ? error.message : String(error)
      // A path below a file, or listing a file: envd says "not a directory" (ENOTDIR).
      if (/not a directory|ENOTDIR/i.test(message)) throw errno('ENOTDIR', message, error)
      if (error instanceof InvalidArgumentError && /directory/i.test(message)) throw errno('EISDIR', message, error)
      if ((error as { name?: unknown } | null)?.name === 'AbortError') throw error
      // Any other SDK failure (a 5xx, a broken request) is still an FsError for the caller.
      throw errno('EIO', message, error)
    }
  }

  protected async statPath(path: string): Promise<FileStat | undefined> {
    try {
      return toStat(await this.call(path, (sandbox) => sandbox.files.getInfo(path) as Promise<EntryInfo>))
    } catch (error) {
      if ((error as { code?: string }).code === 'ENOENT') return undefined
      throw error
    }
  }

  protected async readBytes(path: string, signal?: AbortSignal): Promise<Uint8Array> {
    return this.call(path, (sandbox) => sandbox.files.read(path, { format: 'bytes', ...(signal ? { signal } : {}) }))
  }

  protected async commitBytes(path: string, data: Uint8Array, options: CommitOptions): Promise<FileStat> {
    const dir = dirname(path)
    const parent = await this.statPath(dir)
    if (!parent) {
      if (!options.createParents) throw errno('ENOENT', `${dir} does not exist`)
    } else if (parent.kind !== 'directory') throw errno('ENOTDIR', `${dir} is not a directory`)
    // Write beside the target, then rename over it: a reader sees the old bytes or the new.
    const temp = posix.join(dir, `.${basename(path)}.${randomBytes(6).toString('hex')}${TEMP_SUFFIX}`)
    await this.call(path, async (sandbox) => {
      options.signal?.throwIfAborted()
      await sandbox.files.write(
        temp,
        data.slice().buffer as ArrayBuffer,
        options.signal ? { signal: options.signal } : {},
      )
      try {
        await sandbox.files.rename(temp, path)
      } catch (error) {
        await sandbox.files.remove(temp).catch(() => {})
        throw error
      }
      // An upload gets the daemon's default mode; an existing file's bits are restored.
      if (options.mode !== undefined && (options.mode & 0o7777) !== 0o644) {
        await sandbox.commands.run(`chmod ${(options.mode & 0o7777).toString(8)} ${quote(path)}`)
      }
    })
    const stat = await this.statPath(path)
    if (!stat) throw errno('EIO', `${path} vanished right after it was written`)
    return stat
  }

  protected async listDir(path: string): Promise<DirEntry[]> {
    const entries = await this.call(path, (sandbox) => sandbox.files.list(path) as Promise<EntryInfo[]>)
    return entries.map((entry) => ({ name: entry.name, kind: entry.symlinkTarget ? 'symlink' : kindOf(entry.type) }))
  }

  protected async makeDir(path: string, recursive: boolean): Promise<void> {
    const current = await this.statPath(path)
    if (current) {
      if (recursive && current.kind === 'directory') return
      throw errno('EEXIST', `${path} already exists`)
    }
    if (!recursive) {
      const parent = await this.statPath(dirname(path))
      if (!parent) throw errno('ENOENT', `${dirname(path)} does not exist`)
      if (parent.kind !== 'directory') throw errno('ENOTDIR', `${dirname(path)} is not a directory`)
    }
    await this.call(path, (sandbox) => sandbox.files.makeDir(path))
  }

  protected async removePath(path: string, recursive: boolean): Promise<void> {
    const current = await this.statPath(path)
    if (!current) throw errno('ENOENT', `${path} does not exist`)
    if (current.kind === 'directory' && !recursive && (await this.listDir(path)).length > 0)
      throw errno('ENOTEMPTY', `${path} is not empty`)
    await this.call(path, (sandbox) => sandbox.files.remove(path))
  }
}

function kindOf(type: string | undefined): FileKind {
  return type === 'file' ? 'file' : type === 'dir' ? 'directory' : 'other'
}

function toStat(entry: EntryInfo): FileStat {
  return {
    kind: kindOf(entry.type),
    size: Number(entry.size),
    mtimeMs: entry.modifiedTime ? entry.modifiedTime.getTime() : 0,
    mode: entry.mode & 0o7777,
  }
}

export const name = 'fs-e2b'
export default E2bFileSystem
