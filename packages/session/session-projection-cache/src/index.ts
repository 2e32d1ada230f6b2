// @dsh/session-projection-cache: the persisted projection cache (`ctx.sessionProjectionCache`). One
// JSON document (`session_projcache.json`, by default under `$DSH_HOME/storage/`) holds a checkpoint
// per stored session. It is a cache, never a source of truth: an unreadable or foreign document
// reads as empty (and is rebuilt by the next listing), and every entry is checked against its log by
// `@dsh/session-projection` before it is used.
import { mkdir, readFile } from 'node:fs/promises'
import { dirname, join } from 'node:path'
import type { Context } from 'cordis'
import Schema from 'schemastery'
import { resolveDshHome } from '@dsh/home-paths'
import { withFileLock, writeAtomic } from '@dsh/atomic-write'
import { SessionProjectionCache, type ProjectionCheckpoint } from '@dsh/session-projection'

/** Format version of the document; another version reads as empty. */
export const CACHE_FORMAT = 1

export interface ProjectionCacheConfig {
  /** The cache document. Default: `$DSH_HOME/storage/session_projcache.json`. */
  path?: string
}

interface Document {
  format: number
  checkpoints: { [sessionId: string]: ProjectionCheckpoint }
}

export class JsonProjectionCache extends SessionProjectionCache {
  static Config: Schema<ProjectionCacheConfig> = Schema.object({
    path: Schema.string().description('Cache document path. Default: $DSH_HOME/storage/session_projcache.json.'),
  })

  readonly path: string

  constructor(ctx: Context, config: ProjectionCacheConfig = {}) {
    super(ctx)
    this.path = config.path ?? join(resolveDshHome(), 'storage', 'session_projcache.json')
  }

  async readAll(): Promise<Map<string, ProjectionCheckpoint>> {
    return new Map(Object.entries((await this.load()).checkpoints))
  }

  /**
   * Merges into the document as it is on disk now (under a lock beside it, so two processes
   * listing at once do not drop each other's entries), then replaces it atomically.
   */
  async write(checkpoints: ProjectionCheckpoint[], removed: string[]): Promise<void> {
    await mkdir(dirname(this.path), { recursive: true })
    await withFileLock(this.path, { timeoutMs: 5000, staleMs: 30_000 }, async () => {
      const doc = await this.load()
      for (const id of removed) delete doc.checkpoints[id]
      for (const checkpoint of checkpoints) doc.checkpoints[checkpoint.sessionId] = checkpoint
      await writeAtomic(this.path, JSON.stringify(doc))
    })
  }

  private async load(): Promise<Document> {
    let text: string
    try {
      text = await readFile(this.path, 'utf8')
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return empty()
      throw error
    }
    try {
      const doc = JSON.parse(text) as Partial<Document>
      if (doc?.format !== CACHE_FORMAT || !doc.checkpoints || typeof doc.checkpoints !== 'object') return empty()
      const checkpoints: Document['checkpoints'] = {}
      for (const [id, entry] of Object.entries(doc.checkpoints)) {
        if (isCheckpoint(entry, id)) checkpoints[id] = entry
      }
      return { format: CACHE_FORMAT, checkpoints }
    } catch {
      return empty()
    }
  }
}

const empty = (): Document => ({ format: CACHE_FORMAT, checkpoints: {} })

function isCheckpoint(value: unknown, id: string): value is ProjectionCheckpoint {
  if (!value || typeof value !== 'object') return false
  const c = value as Partial<ProjectionCheckpoint>
  return c.sessionId === id && Number.isInteger(c.events) && (c.events as number) >= 0 && !!c.units && typeof c.units === 'object'
}

export const name = '@dsh/session-projection-cache'
export default JsonProjectionCache
