// @dsh/spill-files: the one place where dsh puts bytes outside `$DSH_HOME`. A private directory
// (created with mkdtemp or checked when configured: a real directory, not a symlink, owned by this
// user, mode 0700), files created in it with O_CREAT|O_EXCL|O_NOFOLLOW and mode 0600, and spill
// writers that never block, never throw, stop at a per-session byte budget and turn a write error
// (a full disk) into a recorded error instead of a stuck stream. Synchronous on purpose: callers
// create and write from event handlers that cannot wait, and nothing here can hang on a close.
import {
  chmodSync,
  closeSync,
  constants,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  rmSync,
  type Stats,
  unlinkSync,
  writeSync,
} from 'node:fs'
import { tmpdir } from 'node:os'
import { basename, dirname, isAbsolute, join } from 'node:path'
import { resolveDshHome } from '@dsh/home-paths'

/** Default per-session cap of spilled bytes (256 MiB). */
export const DEFAULT_SPILL_CAP_BYTES = 256 * 1024 * 1024

/** A refused or failed directory or file operation; `code` is `UNSAFE_DIR`, `INVALID_NAME` or the errno. */
export class PrivateFileError extends Error {
  override name = 'PrivateFileError'
  constructor(
    readonly code: string,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options)
  }
}

/** The system temp directory. The only call of `os.tmpdir()` outside the subprocess and sandbox seams. */
export function systemTempDir(): string {
  return tmpdir()
}

const FILE_FLAGS = constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW

/** A directory only this user reaches: real (never a symlink), owned by this user, mode 0700. */
export class PrivateDir {
  private constructor(
    readonly path: string,
    private readonly dev: number,
    private readonly ino: number,
  ) {}

  /** A fresh directory `<parent>/<prefix>XXXXXX` (mkdtemp: a new, unpredictable name, created 0700). */
  static create(parent: string, prefix: string): PrivateDir {
    if (!isAbsolute(parent))
      throw new PrivateFileError(
        'INVALID_NAME',
        `the parent of a private directory must be an absolute path, got ${JSON.stringify(parent)}`,
      )
    checkSegment(prefix || 'x')
    let path: string
    try {
      path = mkdtempSync(join(parent, prefix))
    } catch (error) {
      throw failure(`cannot create a private directory in ${parent}`, error)
    }
    return PrivateDir.check(path)
  }

  /**
   * `path` as a private directory: created (0700, with missing parents) when absent, else it must
   * be a real directory owned by this user (a looser mode is tightened to 0700). A symlink at
   * `path`, a file, or another owner is refused with `UNSAFE_DIR`.
   */
  static ensure(path: string): PrivateDir {
    if (!isAbsolute(path))
      throw new PrivateFileError(
        'INVALID_NAME',
        `a private directory must be an absolute path, got ${JSON.stringify(path)}`,
      )
    try {
      mkdirSync(dirname(path), { recursive: true, mode: 0o700 })
      mkdirSync(path, { mode: 0o700 })
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST')
        throw failure(`cannot create the private directory ${path}`, error)
    }
    return PrivateDir.check(path)
  }

  private static check(path: string): PrivateDir {
    const stat = inspect(path)
    if ((stat.mode & 0o077) !== 0) {
      try {
        chmodSync(path, 0o700)
      } catch (error) {
        throw failure(`cannot make ${path} private`, error)
      }
    }
    return new PrivateDir(path, stat.dev, stat.ino)
  }

  /** Throws `UNSAFE_DIR` unless the directory is still the one checked at creation (not swapped for a link or another directory). */
  verify(): void {
    const stat = inspect(this.path)
    if (stat.ino !== this.ino || stat.dev !== this.dev) {
      throw new PrivateFileError(
        'UNSAFE_DIR',
        `refusing to write into ${this.path}: it was replaced by another directory since dsh created it`,
      )
    }
  }

  /** The private directory `<this>/<name>` (one path segment). */
  subdir(name: string): PrivateDir {
    checkSegment(name)
    this.verify()
    return PrivateDir.ensure(join(this.path, name))
  }

  /** A fresh private directory `<this>/<prefix>XXXXXX`. */
  tempSubdir(prefix: string): PrivateDir {
    this.verify()
    return PrivateDir.create(this.path, prefix)
  }

  /**
   * Creates the new file `<this>/<name>` (mode 0600) and returns its descriptor. Never follows a
   * link and never opens an existing file (`EEXIST`). When the directory turns out to have been
   * swapped while the file was created, the file is removed again and `UNSAFE_DIR` thrown.
   */
  createFile(name: string): { fd: number; path: string } {
    checkSegment(name)
    this.verify()
    const path = join(this.path, name)
    let fd: number
    try {
      fd = openSync(path, FILE_FLAGS, 0o600)
    } catch (error) {
      throw failure(`cannot create ${path}`, error)
    }
    try {
      this.verify()
    } catch (error) {
      closeSync(fd)
      try {
        unlinkSync(path)
      } catch {
        // The swapped-in place may refuse; the error below names it.
      }
      throw error
    }
    return { fd, path }
  }

  /** Creates `<this>/<name>` with `data` (mode 0600, never over an existing file); returns its path. */
  writeFile(name: string, data: string | Uint8Array): string {
    const { fd, path } = this.createFile(name)
    try {
      writeAll(fd, typeof data === 'string' ? Buffer.from(data, 'utf8') : data)
    } catch (error) {
      closeSync(fd)
      rmSync(path, { force: true })
      throw failure(`cannot write ${path}`, error)
    }
    closeSync(fd)
    return path
  }

  /** Removes the directory and everything in it (after checking it is still ours). */
  remove(): void {
    try {
      this.verify()
    } catch {
      return
    }
    rmSync(this.path, { recursive: true, force: true })
  }
}

let processDir: PrivateDir | undefined

/**
 * This process's private directory under the system temp directory (`dsh-<pid>-XXXXXX`), created
 * on first use and re-created when a temp cleaner (or a confined command) removed or replaced it.
 * Every default location outside `$DSH_HOME` is a subdirectory of it.
 */
export function processTempDir(): PrivateDir {
  if (processDir) {
    try {
      processDir.verify()
      return processDir
    } catch {
      processDir = undefined
    }
  }
  processDir = PrivateDir.create(systemTempDir(), `dsh-${process.pid}-`)
  return processDir
}

/** The path of this process's private temp directory when it exists already (never creates it). */
export function existingProcessTempDir(): string | undefined {
  if (!processDir) return undefined
  try {
    processDir.verify()
    return processDir.path
  } catch {
    return undefined
  }
}

/**
 * `$DSH_HOME/run`, a private directory for files that steer an unconfined program (bash's startup
 * file): the dsh home is read-only inside the sandbox, while the system temp directory is writable
 * by confined commands, which run as the same user and so could rewrite anything kept there.
 */
export function dshRunDir(): PrivateDir {
  return PrivateDir.ensure(join(resolveDshHome(), 'run'))
}

/** The private directory `<processTempDir()>/<name>`. */
export function processTempSubdir(name: string): PrivateDir {
  return processTempDir().subdir(name)
}

/** A byte budget shared by every spill writer with the same key (e.g. one session). */
export interface SpillBudget {
  readonly key: string
  /** Most bytes the key may spill; the latest `spillBudget` call sets it. */
  limitBytes: number
  usedBytes: number
}

const budgets = new Map<string, SpillBudget>()

/** The process-wide budget of `key` (created on first use), capped at `limitBytes`. */
export function spillBudget(key: string, limitBytes: number = DEFAULT_SPILL_CAP_BYTES): SpillBudget {
  if (!Number.isSafeInteger(limitBytes) || limitBytes < 0)
    throw new PrivateFileError('INVALID_NAME', `a spill cap must be a non-negative integer, got ${limitBytes}`)
  let budget = budgets.get(key)
  if (!budget) budgets.set(key, (budget = { key, limitBytes, usedBytes: 0 }))
  budget.limitBytes = limitBytes
  return budget
}

/**
 * One spill file, written synchronously. `write` never throws and never blocks on anything but
 * the write itself: past the budget the rest is dropped after a one-line marker; a write error
 * (ENOSPC, EIO, EFBIG) stops the file and is kept in `error`. Either way the caller's own
 * head/tail retention goes on.
 */
export class SpillWriter {
  readonly path: string
  private fd: number | undefined
  /** Bytes of the stream written to the file (the marker not counted). */
  written = 0
  /** Bytes of the stream not in the file (past the cap or after an error). */
  dropped = 0
  /** Set once the budget ran out. */
  capped = false
  /** Set once a write failed; the file is incomplete. */
  error: string | undefined

  /** Creates `<dir>/<name>`; throws a `PrivateFileError` when it cannot. */
  constructor(
    dir: PrivateDir,
    name: string,
    private readonly budget?: SpillBudget,
  ) {
    const file = dir.createFile(name)
    this.fd = file.fd
    this.path = file.path
  }

  /** Appends `chunk` (as much as the budget allows). */
  write(chunk: Uint8Array): void {
    if (chunk.byteLength === 0) return
    if (this.fd === undefined) {
      this.dropped += chunk.byteLength
      return
    }
    let allowed = chunk.byteLength
    if (this.budget) allowed = Math.max(0, Math.min(allowed, this.budget.limitBytes - this.budget.usedBytes))
    let inFile = 0
    try {
      if (allowed > 0) {
        writeAll(this.fd, allowed === chunk.byteLength ? chunk : chunk.subarray(0, allowed))
        inFile = allowed
        this.written += allowed
        if (this.budget) this.budget.usedBytes += allowed
      }
      if (allowed < chunk.byteLength) {
        this.dropped += chunk.byteLength - allowed
        this.capped = true
        const limit = this.budget?.limitBytes ?? 0
        writeAll(
          this.fd,
          Buffer.from(
            `\n[dsh: the spill cap of ${limit} bytes for this session was reached; the rest of the output is not in this file]\n`,
            'utf8',
          ),
        )
        this.close()
      }
    } catch (error) {
      if (!this.capped) this.dropped += chunk.byteLength - inFile
      this.error = `cannot write the spill file ${this.path}: ${describe(error)}`
      this.close()
    }
  }

  /** Closes the file; safe to call more than once, never throws. */
  close(): void {
    if (this.fd === undefined) return
    const fd = this.fd
    this.fd = undefined
    try {
      closeSync(fd)
    } catch (error) {
      this.error ??= `cannot write the spill file ${this.path}: ${describe(error)}`
    }
  }
}

function writeAll(fd: number, data: Uint8Array): void {
  let offset = 0
  while (offset < data.byteLength) offset += writeSync(fd, data, offset, data.byteLength - offset)
}

function inspect(path: string) {
  let stat: Stats
  try {
    stat = lstatSync(path)
  } catch (error) {
    throw failure(`cannot use ${path}`, error)
  }
  if (stat.isSymbolicLink())
    throw new PrivateFileError('UNSAFE_DIR', `refusing to write into ${path}: it is a symbolic link`)
  if (!stat.isDirectory())
    throw new PrivateFileError('UNSAFE_DIR', `refusing to write into ${path}: it is not a directory`)
  const uid = process.getuid?.()
  if (uid !== undefined && stat.uid !== uid)
    throw new PrivateFileError(
      'UNSAFE_DIR',
      `refusing to write into ${path}: it is owned by uid ${stat.uid}, not by this user`,
    )
  return stat
}

function checkSegment(name: string): void {
  if (
    typeof name !== 'string' ||
    name === '' ||
    name === '.' ||
    name === '..' ||
    basename(name) !== name ||
    name.includes('\0') ||
    name.length > 200
  ) {
    throw new PrivateFileError('INVALID_NAME', `not a single file name: ${JSON.stringify(name)}`)
  }
}

function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error)
}

function failure(what: string, error: unknown): PrivateFileError {
  if (error instanceof PrivateFileError) return error
  const code = (error as NodeJS.ErrnoException)?.code ?? 'IO'
  return new PrivateFileError(code, `${what}: ${describe(error)}`, { cause: error })
}
