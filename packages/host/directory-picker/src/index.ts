// @dsh/directory-picker: the browse backend of the directory picker. `ctx.directoryPicker` lists one
// directory level and creates child directories on the host; with `ctx.api` mounted it serves them
// as the loopback-only methods host.listDirectory / host.createDirectory.
import type { Dir } from 'node:fs'
import { opendir, mkdir, stat } from 'node:fs/promises'
import { homedir } from 'node:os'
import { dirname, isAbsolute, join, resolve } from 'node:path'
import { type Context, Service } from 'cordis'
import Schema from 'schemastery'
import { ApiError } from '@dsh/web-protocol'
import type {} from '@dsh/api-gateway' // declares ctx.api (a type-only import: the gateway stays optional at runtime)
import {
  hostCreateDirectory,
  hostListDirectory,
  type DirectoryEntry,
  type DirectoryEntryKind,
  type DirectoryListing,
} from './contract.ts'

export * from './contract.ts'

export const name = 'directory-picker'

export interface DirectoryPickerConfig {
  /** Entries returned when the caller gives no limit. */
  defaultLimit: number
  /** The largest limit a caller may ask for. */
  maxLimit: number
  /** Directory entries read at most per listing (bounds memory and time on huge directories). */
  scanLimit: number
}

export const Config: Schema<Partial<DirectoryPickerConfig>, DirectoryPickerConfig> = Schema.object({
  defaultLimit: Schema.natural().min(1).default(500).description('Entries returned without an explicit limit.'),
  maxLimit: Schema.natural().min(1).default(5000).description('Largest limit a caller may ask for.'),
  scanLimit: Schema.natural().min(1).default(100_000).description('Directory entries read at most per listing.'),
}) as Schema<Partial<DirectoryPickerConfig>, DirectoryPickerConfig>

export interface ListOptions {
  path?: string
  showHidden?: boolean
  directoriesOnly?: boolean
  limit?: number
}

declare module 'cordis' {
  interface Context {
    directoryPicker: DirectoryPicker
  }
}

// Made at the first listing: building a collator loads locale data (~10 ms), which the start of
// the web host should not pay for a picker that may never open.
let collator: Intl.Collator | undefined

function byName(a: DirectoryEntry, b: DirectoryEntry): number {
  collator ??= new Intl.Collator('en', { numeric: true, sensitivity: 'base' })
  return collator.compare(a.name, b.name) || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0)
}

/** `~`/`~/x` expand; anything else must be absolute. */
function absolute(raw: unknown, field: string): string {
  if (typeof raw !== 'string' || raw.trim() === '')
    throw new ApiError('INVALID_PARAMS', `${field}: give an absolute directory path`, { field })
  if (raw.includes('\0')) throw new ApiError('INVALID_PARAMS', `${field}: contains a NUL character`, { field })
  const text = raw.trim()
  const expanded = text === '~' ? homedir() : text.startsWith('~/') ? join(homedir(), text.slice(2)) : text
  if (!isAbsolute(expanded))
    throw new ApiError('INVALID_PARAMS', `${field}: ${JSON.stringify(text)} is not absolute`, { field })
  return resolve(expanded)
}

function fsError(error: unknown, path: string, field: string): ApiError {
  const code = (error as NodeJS.ErrnoException).code
  if (code === 'ENOENT')
    return new ApiError('PATH_NOT_FOUND', `${field}: ${path} does not exist`, { status: 400, field })
  if (code === 'ENOTDIR') return new ApiError('NOT_A_DIRECTORY', `${field}: ${path} is not a directory`, { field })
  if (code === 'EACCES' || code === 'EPERM')
    return new ApiError('PERMISSION_DENIED', `${field}: permission denied for ${path}`, { status: 403, field })
  if (code === 'EEXIST') return new ApiError('ALREADY_EXISTS', `${path} already exists`, { status: 409, field: 'name' })
  return new ApiError('FS_ERROR', `${field}: ${path}: ${code ?? (error as Error).message}`, { status: 500, field })
}

export class DirectoryPicker extends Service {
  static Config = Config
  readonly capability = 'browse' as const
  private readonly config: DirectoryPickerConfig

  constructor(ctx: Context, config: Partial<DirectoryPickerConfig> = {}) {
    super(ctx, 'directoryPicker')
    this.config = { defaultLimit: 500, maxLimit: 5000, scanLimit: 100_000, ...config }
    ctx.inject(['api'], (inner) => {
      const api = inner.api
      api.register(hostListDirectory, (params) => this.list(params))
      api.register(hostCreateDirectory, (params) => this.createDirectory(params.parent, params.name))
    })
  }

  /** One level of `path` (default: the home directory). Throws ApiError for a bad path. */
  async list(options: ListOptions = {}): Promise<DirectoryListing> {
    const path = options.path === undefined ? homedir() : absolute(options.path, 'path')
    const limit = Math.min(options.limit ?? this.config.defaultLimit, this.config.maxLimit)
    if (!Number.isInteger(limit) || limit < 1)
      throw new ApiError('INVALID_PARAMS', 'limit: expected a positive integer', { field: 'limit' })
    let dir: Dir
    try {
      const info = await stat(path)
      if (!info.isDirectory()) throw Object.assign(new Error('not a directory'), { code: 'ENOTDIR' })
      dir = await opendir(path, { bufferSize: 256 })
    } catch (error) {
      throw fsError(error, path, 'path')
    }
    const entries: DirectoryEntry[] = []
    let scanned = 0
    let capped = false
    try {
      for await (const dirent of dir) {
        if (++scanned > this.config.scanLimit) {
          capped = true
          break
        }
        const hidden = dirent.name.startsWith('.')
        if (hidden && !options.showHidden) continue
        const full = join(path, dirent.name)
        let kind: DirectoryEntryKind = dirent.isDirectory() ? 'directory' : dirent.isFile() ? 'file' : 'other'
        const symlink = dirent.isSymbolicLink()
        if (symlink) {
          const target = await stat(full).catch(() => undefined)
          kind = !target ? 'other' : target.isDirectory() ? 'directory' : target.isFile() ? 'file' : 'other'
        }
        if (options.directoriesOnly && kind !== 'directory') continue
        entries.push({ name: dirent.name, path: full, kind, hidden, symlink })
      }
    } finally {
      // Breaking out of the iteration closes the handle; a completed one is closed already.
      await dir.close().catch(() => {})
    }
    entries.sort((a, b) => Number(b.kind === 'directory') - Number(a.kind === 'directory') || byName(a, b))
    const parent = dirname(path)
    return {
      path,
      parent: parent === path ? null : parent,
      entries: entries.slice(0, limit),
      truncated: capped || entries.length > limit,
      total: entries.length,
    }
  }

  /** Creates `<parent>/<name>` (one level; the parent must exist). Resolves to its path. */
  async createDirectory(parent: string, name: string): Promise<{ path: string }> {
    const base = absolute(parent, 'parent')
    if (typeof name !== 'string' || name.trim() === '')
      throw new ApiError('INVALID_PARAMS', 'name: a directory name must not be empty', { field: 'name' })
    if (name !== name.trim())
      throw new ApiError('INVALID_PARAMS', 'name: a directory name must not start or end with spaces', {
        field: 'name',
      })
    if (name === '.' || name === '..' || /[/\\\0]/.test(name))
      throw new ApiError(
        'INVALID_PARAMS',
        `name: ${JSON.stringify(name)} is not a single directory name (no "/", "\\", ".", "..")`,
        { field: 'name' },
      )
    if (/[\u0000-\u001f\u007f]/.test(name))
      throw new ApiError('INVALID_PARAMS', 'name: a directory name must not contain control characters', {
        field: 'name',
      })
    if (Buffer.byteLength(name) > 255)
      throw new ApiError('INVALID_PARAMS', 'name: a directory name is at most 255 bytes', { field: 'name' })
    try {
      const info = await stat(base)
      if (!info.isDirectory()) throw Object.assign(new Error('not a directory'), { code: 'ENOTDIR' })
    } catch (error) {
      throw fsError(error, base, 'parent')
    }
    const path = join(base, name)
    try {
      await mkdir(path)
    } catch (error) {
      throw fsError(error, path, 'parent')
    }
    return { path }
  }
}

export default DirectoryPicker
