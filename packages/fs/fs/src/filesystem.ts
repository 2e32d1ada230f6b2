// The abstract `ctx.fs` service. Providers implement the protected primitives; this base class
// owns the contract around them: path resolution, the per-path critical section, the
// `fs/before-write` gate and the `fs/read` / `fs/wrote` observations. A provider therefore cannot
// forget to gate a mutation, and every provider gates the same way.
import { createHash } from 'node:crypto'
import { resolve as resolvePosix } from 'node:path'
import { type Context, Service } from 'cordis'
import { FsError, toFsError } from './errors.ts'
import { PathLock } from './lock.ts'
import type {
  DirEntry,
  EditResult,
  EditTransform,
  FileStat,
  FsBeforeWritePayload,
  FsCallOptions,
  FsMutationKind,
  FsWroteEvent,
  ReadResult,
  ReadTextResult,
  RemoveOptions,
  WriteOptions,
  WriteResult,
} from './types.ts'

export interface CommitOptions {
  /** Permission bits the committed file must have. */
  mode?: number
  createParents: boolean
  signal?: AbortSignal
}

export function sha256(bytes: Uint8Array): string {
  return createHash('sha256').update(bytes).digest('hex')
}

const encoder = new TextEncoder()
const decoder = new TextDecoder('utf-8', { fatal: false })

export abstract class FileSystem extends Service {
  /** Serializes writes, edits and removes of one resolved path inside this process. */
  protected readonly locks = new PathLock()

  constructor(ctx: Context) {
    super(ctx, 'fs')
  }

  // ---- primitives a provider implements -------------------------------------------------------

  /** Stat following symlinks; undefined when the path does not exist. */
  protected abstract statPath(path: string): Promise<FileStat | undefined>
  protected abstract readBytes(path: string, signal?: AbortSignal): Promise<Uint8Array>
  /** Replaces (or creates) the file atomically: a reader sees the old bytes or the new, never a mix. */
  protected abstract commitBytes(path: string, data: Uint8Array, options: CommitOptions): Promise<FileStat>
  protected abstract listDir(path: string): Promise<DirEntry[]>
  protected abstract makeDir(path: string, recursive: boolean): Promise<void>
  protected abstract removePath(path: string, recursive: boolean): Promise<void>

  // ---- the contract ---------------------------------------------------------------------------

  /** Absolute form of `path`, relative paths taken against `cwd` (default: the process cwd). */
  resolve(path: string, cwd?: string): string {
    if (typeof path !== 'string' || path === '') throw new FsError('NOT_FOUND', String(path), 'the path is empty')
    if (path.includes('\0')) throw new FsError('NOT_FOUND', path, 'the path contains a NUL character')
    return cwd === undefined ? resolvePosix(path) : resolvePosix(cwd, path)
  }

  async stat(path: string): Promise<FileStat> {
    const abs = this.resolve(path)
    const stat = await this.wrap(abs, () => this.statPath(abs))
    if (!stat) throw new FsError('NOT_FOUND', abs, `${abs} does not exist`)
    return stat
  }

  async exists(path: string): Promise<boolean> {
    const abs = this.resolve(path)
    return (await this.wrap(abs, () => this.statPath(abs))) !== undefined
  }

  /** Reads a whole file and emits `fs/read`. */
  async readFile(path: string, options: FsCallOptions = {}): Promise<ReadResult> {
    const abs = this.resolve(path)
    return this.wrap(abs, async () => {
      const before = await this.statPath(abs)
      if (!before) throw new FsError('NOT_FOUND', abs, `${abs} does not exist`)
      if (before.kind === 'directory') throw new FsError('IS_DIRECTORY', abs, `${abs} is a directory, not a file`)
      const bytes = await this.readBytes(abs, options.signal)
      // The stat reported is taken after the read so an observation never predates the content.
      const stat = (await this.statPath(abs)) ?? before
      const hash = sha256(bytes)
      this.observe('fs/read', {
        path: abs,
        ...(options.session !== undefined ? { session: options.session } : {}),
        stat,
        hash,
      })
      return { path: abs, bytes, stat, hash }
    })
  }

  async readText(path: string, options: FsCallOptions = {}): Promise<ReadTextResult> {
    const { bytes, ...rest } = await this.readFile(path, options)
    return { ...rest, text: decoder.decode(bytes) }
  }

  /** Atomically replaces or creates a file, after the `fs/before-write` gate. Existing files keep their mode. */
  async writeFile(path: string, data: string | Uint8Array, options: WriteOptions = {}): Promise<WriteResult> {
    const abs = this.resolve(path)
    const bytes = typeof data === 'string' ? encoder.encode(data) : data
    return this.wrap(abs, () =>
      this.locks.run(abs, async () => {
        const current = await this.statPath(abs)
        if (current?.kind === 'directory') throw new FsError('IS_DIRECTORY', abs, `${abs} is a directory, not a file`)
        let cached: Promise<string | undefined> | undefined
        await this.gate({
          path: abs,
          kind: 'write',
          ...(options.session !== undefined ? { session: options.session } : {}),
          ...(current ? { current } : {}),
          currentHash: () =>
            (cached ??= current ? this.readBytes(abs).then(sha256, () => undefined) : Promise.resolve(undefined)),
        })
        const stat = await this.commitBytes(abs, bytes, {
          mode: current?.mode ?? options.mode,
          createParents: options.createParents === true,
          signal: options.signal,
        })
        const result: WriteResult = { path: abs, created: !current, stat, hash: sha256(bytes) }
        this.wrote('write', result, options.session)
        return result
      }),
    )
  }

  /**
   * Read-match-write as one critical section: reads the file, applies `transform`, passes the gate
   * and commits atomically, with no other write or edit of the same path in between (in-process).
   */
  async edit(path: string, transform: EditTransform, options: FsCallOptions = {}): Promise<EditResult> {
    const abs = this.resolve(path)
    return this.wrap(abs, () =>
      this.locks.run(abs, async () => {
        const first = await this.statPath(abs)
        if (!first) throw new FsError('NOT_FOUND', abs, `${abs} does not exist`)
        if (first.kind === 'directory') throw new FsError('IS_DIRECTORY', abs, `${abs} is a directory, not a file`)
        const raw = await this.readBytes(abs, options.signal)
        const current = (await this.statPath(abs)) ?? first
        const before = decoder.decode(raw)
        const after = transform(before)
        if (typeof after !== 'string') throw new TypeError('fs.edit: the transform must return a string')
        const rawHash = sha256(raw)
        await this.gate({
          path: abs,
          kind: 'edit',
          ...(options.session !== undefined ? { session: options.session } : {}),
          current,
          currentHash: async () => rawHash,
        })
        const bytes = encoder.encode(after)
        const stat = await this.commitBytes(abs, bytes, {
          mode: current.mode,
          createParents: false,
          signal: options.signal,
        })
        const result: EditResult = { path: abs, created: false, stat, hash: sha256(bytes), before, after }
        this.wrote('edit', result, options.session)
        return result
      }),
    )
  }

  /** Entries of a directory, sorted by name. */
  async list(path: string): Promise<DirEntry[]> {
    const abs = this.resolve(path)
    const entries = await this.wrap(abs, () => this.listDir(abs))
    return entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
  }

  /** Alias of `list`. */
  readdir(path: string): Promise<DirEntry[]> {
    return this.list(path)
  }

  async mkdir(path: string, options: { recursive?: boolean } = {}): Promise<void> {
    const abs = this.resolve(path)
    await this.wrap(abs, () => this.makeDir(abs, options.recursive === true))
  }

  /** Removes a file (or a directory with `recursive`), after the `fs/before-write` gate. */
  async remove(path: string, options: RemoveOptions = {}): Promise<void> {
    const abs = this.resolve(path)
    await this.wrap(abs, () =>
      this.locks.run(abs, async () => {
        const current = await this.statPath(abs)
        if (!current) {
          if (options.force) return
          throw new FsError('NOT_FOUND', abs, `${abs} does not exist`)
        }
        await this.gate({
          path: abs,
          kind: 'remove',
          ...(options.session !== undefined ? { session: options.session } : {}),
          current,
          currentHash: async () => (current.kind === 'file' ? sha256(await this.readBytes(abs)) : undefined),
        })
        await this.removePath(abs, options.recursive === true)
        this.observe('fs/wrote', {
          path: abs,
          kind: 'remove',
          ...(options.session !== undefined ? { session: options.session } : {}),
          created: false,
        })
      }),
    )
  }

  // ---- helpers --------------------------------------------------------------------------------

  /** Runs the `fs/before-write` waterfall and throws the denial, if any. */
  protected async gate(payload: FsBeforeWritePayload): Promise<void> {
    await this.ctx.waterfall('fs/before-write', payload, async () => {})
    const deny = payload.deny
    if (deny)
      throw new FsError(
        deny.code || 'DENIED',
        payload.path,
        deny.message || `writing ${payload.path} was refused by a policy`,
      )
  }

  private wrote(kind: FsMutationKind, result: WriteResult, session: string | undefined): void {
    const event: FsWroteEvent = {
      path: result.path,
      kind,
      ...(session !== undefined ? { session } : {}),
      stat: result.stat,
      hash: result.hash,
      created: result.created,
    }
    this.observe('fs/wrote', event)
  }

  private observe<K extends 'fs/read' | 'fs/wrote'>(name: K, event: Parameters<import('cordis').Events[K]>[0]): void {
    try {
      this.ctx.emit(name, event as never)
    } catch (error) {
      this.ctx
        .logger('fs')
        .warn('a %s listener threw: %s', name, error instanceof Error ? error.message : String(error))
    }
  }

  private async wrap<T>(path: string, work: () => Promise<T>): Promise<T> {
    try {
      return await work()
    } catch (error) {
      // System errors (errno codes) and aborts become FsErrors; anything else (a transform's own
      // error, a listener's exception) reaches the caller unchanged.
      const code = (error as { code?: unknown } | null)?.code
      const systemError = typeof code === 'string' && /^E[A-Z]+$/.test(code)
      const abort = (error as { name?: unknown } | null)?.name === 'AbortError'
      throw systemError || abort ? toFsError(error, path) : error
    }
  }
}
