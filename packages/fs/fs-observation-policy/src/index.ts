// @dsh/fs-observation-policy: read-before-edit and stale-write refusal through the `fs/*` events.
//
// Per session it remembers what the agent last saw of each path (size, mtime, sha256), from
// `fs/read` and from its own `fs/wrote`. In the `fs/before-write` gate it refuses a write or edit
// of an existing file the session has not seen, or whose content changed since. New files pass.
// It registers no service: providers and tools know nothing about it.
import type { Context } from 'cordis'
import Schema from 'schemastery'
import type { FileStat, FsBeforeWritePayload } from '@dsh/fs'

export interface ObservationPolicyConfig {
  /** Skip hashing when size and mtime equal what the session saw. */
  trustMtime: boolean
  /** Sessions remembered at once; the least recently active is forgotten first. */
  maxSessions: number
  /** Paths remembered per session; the least recently observed is forgotten first. */
  maxPathsPerSession: number
}

export const Config: Schema<Partial<ObservationPolicyConfig>, ObservationPolicyConfig> = Schema.object({
  trustMtime: Schema.boolean()
    .default(true)
    .description(
      'Treat an unchanged size and mtime as unchanged content (no re-hash). Off: hash the file before every guarded write.',
    ),
  maxSessions: Schema.natural().min(1).default(256).description('Sessions whose observations are kept at once.'),
  maxPathsPerSession: Schema.natural().min(1).default(20_000).description('Observed paths kept per session.'),
})

export const name = 'fs-observation-policy'

/** Codes of the refusals, carried as `FsError.code` to the caller. */
export const NOT_READ = 'FILE_NOT_READ'
export const STALE = 'FILE_STALE'

interface Observation {
  size: number
  mtimeMs: number
  hash: string
}

/** Insertion-ordered map used as an LRU: touching a key moves it to the end. */
class Lru<K, V> extends Map<K, V> {
  constructor(private readonly limit: number) {
    super()
  }
  touch(key: K, value: V): void {
    this.delete(key)
    this.set(key, value)
    while (this.size > this.limit) this.delete(this.keys().next().value as K)
  }
}

export function apply(ctx: Context, config: ObservationPolicyConfig): void {
  const sessions = new Lru<string, Lru<string, Observation>>(config.maxSessions)

  const bucket = (session: string) => {
    let paths = sessions.get(session)
    if (!paths) paths = new Lru(config.maxPathsPerSession)
    sessions.touch(session, paths)
    return paths
  }
  const record = (session: string, path: string, stat: FileStat, hash: string) =>
    bucket(session).touch(path, { size: stat.size, mtimeMs: stat.mtimeMs, hash })

  ctx.on('fs/read', (event) => {
    if (event.session !== undefined) record(event.session, event.path, event.stat, event.hash)
  })

  ctx.on('fs/wrote', (event) => {
    if (event.session === undefined) return
    if (event.stat && event.hash !== undefined) record(event.session, event.path, event.stat, event.hash)
    else bucket(event.session).delete(event.path)
  })

  ctx.on(
    'fs/before-write',
    async (payload: FsBeforeWritePayload, next) => {
      const { session, current, path, kind } = payload
      if (session === undefined || kind === 'remove' || !current || current.kind !== 'file') return next()
      const seen = sessions.get(session)?.get(path)
      const verb = kind === 'edit' ? 'editing' : 'overwriting'
      if (!seen) {
        payload.deny = {
          code: NOT_READ,
          message:
            `${path} already exists and has not been read in this session. ` +
            `Read it with the read tool first, then retry; ${verb} a file you have not seen could destroy its content.`,
        }
        return
      }
      if (config.trustMtime && seen.size === current.size && seen.mtimeMs === current.mtimeMs) return next()
      const hash = await payload.currentHash()
      if (hash !== undefined && hash === seen.hash) {
        // Touched but not changed: refresh the stat so the next check is cheap again.
        record(session, path, current, hash)
        return next()
      }
      payload.deny = {
        code: STALE,
        message:
          `${path} has changed on disk since it was last read in this session ` +
          `(then ${seen.size} bytes, modified ${new Date(seen.mtimeMs).toISOString()}; now ${current.size} bytes, modified ${new Date(current.mtimeMs).toISOString()}). ` +
          `Read it again with the read tool and base your change on its current content before ${verb} it.`,
      }
    },
    { prepend: true },
  )
}
