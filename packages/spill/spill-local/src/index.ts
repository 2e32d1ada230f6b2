// @dsh/spill-local: the local-filesystem spill store. Each spilled result is one private file,
// `<dir>/<sessionId>/<callId>.txt`, written whole (temp file, then link) so a reader never sees
// a partial spill. The default dir is `$DSH_HOME/sessions/spill`, which confined commands cannot
// write (sandbox-policy keeps the home read-only); every directory on the way is still checked
// (a real directory owned by us, never a symlink) and files are created with O_EXCL|O_NOFOLLOW.
import { randomBytes } from 'node:crypto'
import { constants } from 'node:fs'
import { chmod, link, lstat, mkdir, open, realpath, rename, rm } from 'node:fs/promises'
import { isAbsolute, join, resolve } from 'node:path'
import type { Context } from 'cordis'
import Schema from 'schemastery'
import { resolveDshHome } from '@dsh/home-paths'
import { SpillError, SpillStore, type SpillRecord, type SpillRequest } from '@dsh/spill'

export interface LocalSpillConfig {
  /** Root of the spill files. Default: `$DSH_HOME/sessions/spill`. Relative paths resolve against the process cwd. */
  dir?: string
}

/** Directory for results without a session. */
export const NO_SESSION_DIR = '_no-session'

/** A name safe as one path segment: no separators, no `.`/`..`, bounded length. */
export function safeSegment(raw: string, fallback: string): string {
  const cleaned = raw.replace(/[^A-Za-z0-9._-]/g, '_').slice(0, 120)
  if (cleaned === '' || /^\.+$/.test(cleaned)) return fallback
  return cleaned
}

export class LocalSpillStore extends SpillStore {
  static override name = 'spill-local'
  static Config: Schema<LocalSpillConfig> = Schema.object({
    dir: Schema.string().description('Root directory of spill files. Default: $DSH_HOME/sessions/spill.'),
  })

  /** Absolute root directory of the spill files. */
  readonly root: string
  /** The root's real path, fixed at the first save: a later symlink swap on the way is refused. */
  private realRoot?: string

  constructor(ctx: Context, config: LocalSpillConfig = {}) {
    super(ctx)
    const dir = config.dir?.trim()
    this.root = dir ? (isAbsolute(dir) ? dir : resolve(dir)) : join(resolveDshHome(), 'sessions', 'spill')
  }

  /** The file a request would be stored in (before collision suffixes). */
  pathFor(request: Pick<SpillRequest, 'sessionId' | 'callId'>): string {
    const session = request.sessionId === undefined ? NO_SESSION_DIR : safeSegment(request.sessionId, NO_SESSION_DIR)
    return join(this.root, session, `${safeSegment(request.callId, 'call')}.txt`)
  }

  async save(request: SpillRequest): Promise<SpillRecord> {
    const target = this.pathFor(request)
    const dir = resolve(target, '..')
    const data = Buffer.from(request.text, 'utf8')
    let dirIno: number
    try {
      await mkdir(this.root, { recursive: true, mode: 0o700 }).catch(ignoreExisting)
      // The configured root may itself be reached through a symlink; it must keep resolving to
      // the place it resolved to at the first save.
      const real = await realpath(this.root)
      this.realRoot ??= real
      if (real !== this.realRoot)
        throw new SpillError(
          'UNSAFE_DIR',
          `refusing to spill into ${this.root}: it now resolves to ${real}, not ${this.realRoot} (a symlink was swapped in)`,
        )
      await checkDir(real, false)
      await mkdir(dir, { mode: 0o700 }).catch(ignoreExisting)
      dirIno = await checkDir(dir, true)
    } catch (error) {
      if (error instanceof SpillError) throw error
      throw failure(`cannot create the spill directory ${dir}`, error)
    }
    // Call ids repeat across resumed sessions and replays: never overwrite an earlier spill. The
    // text is written to a temp file first and published with link(), which fails on an existing name.
    const temp = join(dir, `.${randomBytes(6).toString('hex')}.tmp`)
    let path = target
    try {
      // O_EXCL never follows a symlink at the name; O_NOFOLLOW says so explicitly.
      const handle = await open(
        temp,
        constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW,
        0o600,
      )
      try {
        await handle.writeFile(data)
        await handle.sync()
      } finally {
        await handle.close()
      }
      // The directory must still be the one checked above (not swapped between check and write).
      if ((await checkDir(dir, true)) !== dirIno)
        throw new SpillError('UNSAFE_DIR', `refusing to spill into ${dir}: it was replaced while the spill was written`)
      for (let n = 2; ; n++) {
        try {
          await link(temp, path)
          break
        } catch (error) {
          const code = (error as NodeJS.ErrnoException).code
          if (code === 'EEXIST' && n <= 1000) {
            path = target.replace(/\.txt$/, `-${n}.txt`)
            continue
          }
          if (code === 'EPERM' || code === 'ENOTSUP' || code === 'EOPNOTSUPP') {
            // No hard links on this filesystem: fall back to rename (last writer wins on a collision).
            await rename(temp, path)
            break
          }
          throw error
        }
      }
    } catch (error) {
      if (error instanceof SpillError) throw error
      throw failure(`cannot write the spill file ${path}`, error)
    } finally {
      await rm(temp, { force: true }).catch(() => {})
    }
    return {
      locator: path,
      bytes: data.byteLength,
      hint: `Use the read tool on this path (with offset and limit to page through it) or grep to search it.`,
    }
  }
}

function ignoreExisting(error: NodeJS.ErrnoException): void {
  if (error.code !== 'EEXIST') throw error
}

/**
 * Returns the inode of `dir` after checking it is a real directory (not a symlink) owned by this
 * user; `private` dirs (the per-session ones dsh creates) are also tightened to 0700.
 */
async function checkDir(dir: string, privateDir: boolean): Promise<number> {
  const stat = await lstat(dir)
  if (stat.isSymbolicLink()) throw new SpillError('UNSAFE_DIR', `refusing to spill into ${dir}: it is a symbolic link`)
  if (!stat.isDirectory())
    throw new SpillError('ENOTDIR', `cannot create the spill directory ${dir}: ENOTDIR: it is not a directory`)
  const uid = process.getuid?.()
  if (uid !== undefined && stat.uid !== uid)
    throw new SpillError(
      'UNSAFE_DIR',
      `refusing to spill into ${dir}: it is owned by uid ${stat.uid}, not by this user`,
    )
  if (privateDir && (stat.mode & 0o077) !== 0) await chmod(dir, 0o700)
  return stat.ino
}

function failure(what: string, error: unknown): SpillError {
  const code = (error as NodeJS.ErrnoException)?.code ?? 'IO'
  const message = error instanceof Error ? error.message : String(error)
  return new SpillError(code, `${what}: ${message}`, { cause: error })
}

export default LocalSpillStore
