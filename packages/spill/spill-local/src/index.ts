// @dsh/spill-local: the local-filesystem spill store. Each spilled result is one private file,
// `<dir>/<sessionId>/<callId>.txt`, written whole (temp file, then rename) so a reader never sees
// a partial spill. The default dir is `$DSH_HOME/sessions/spill`.
import { randomBytes } from 'node:crypto'
import { link, mkdir, open, rename, rm } from 'node:fs/promises'
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
    try {
      await mkdir(dir, { recursive: true, mode: 0o700 })
    } catch (error) {
      throw failure(`cannot create the spill directory ${dir}`, error)
    }
    // Call ids repeat across resumed sessions and replays: never overwrite an earlier spill. The
    // text is written to a temp file first and published with link(), which fails on an existing name.
    const temp = join(dir, `.${randomBytes(6).toString('hex')}.tmp`)
    let path = target
    try {
      const handle = await open(temp, 'wx', 0o600)
      try {
        await handle.writeFile(data)
        await handle.sync()
      } finally {
        await handle.close()
      }
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

function failure(what: string, error: unknown): SpillError {
  const code = (error as NodeJS.ErrnoException)?.code ?? 'IO'
  const message = error instanceof Error ? error.message : String(error)
  return new SpillError(code, `${what}: ${message}`, { cause: error })
}

export default LocalSpillStore
