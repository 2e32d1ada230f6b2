// @dsh/session-projection-cache: the persisted projection cache (`ctx.sessionProjectionCache`). A
// JSON document (`session_projcache.json`, by default under `$DSH_HOME/storage/`) holds a checkpoint
// per stored session; small updates are appended to a journal beside it (`<path>.journal`, one JSON
// line per update) and folded into the document when the journal grows. It is a cache, never a
// source of truth: an unreadable or foreign document reads as empty (and is rebuilt by the next
// listing), a journal line that is torn or of another document generation is skipped, and every
// entry is checked against its log by `@dsh/session-projection` before it is used.
import { randomBytes } from 'node:crypto'
import { appendFile, mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises'
import { basename, dirname, join } from 'node:path'
import type { Context } from 'cordis'
import Schema from 'schemastery'
import { resolveDshHome } from '@dsh/home-paths'
import { withFileLock } from '@dsh/atomic-write'
import { SessionProjectionCache, type ProjectionCheckpoint } from '@dsh/session-projection'

/** Format version of the document; another version reads as empty. */
export const CACHE_FORMAT = 1

export interface ProjectionCacheConfig {
  /** The cache document. Default: `$DSH_HOME/storage/session_projcache.json`. */
  path?: string
  /** The journal is folded into the document once it exceeds this share of the document's size. */
  journalRatio?: number
}

interface Document {
  format: number
  /** Random id of this version of the document; journal lines name the generation they extend. */
  generation?: string
  checkpoints: { [sessionId: string]: ProjectionCheckpoint }
}

/** One journal line: checkpoints stored and sessions dropped, on top of document `generation`. */
interface JournalLine {
  generation: string
  put?: ProjectionCheckpoint[]
  drop?: string[]
}

/** The journal is always allowed this many bytes, whatever the document's size. */
const JOURNAL_FLOOR = 64 * 1024

export class JsonProjectionCache extends SessionProjectionCache {
  static Config: Schema<ProjectionCacheConfig> = Schema.object({
    path: Schema.string().description('Cache document path. Default: $DSH_HOME/storage/session_projcache.json.'),
    journalRatio: Schema.number()
      .min(0)
      .default(0.25)
      .description(
        'Fold the journal into the document once it exceeds this share of the document size (0: always rewrite).',
      ),
  })

  readonly path: string
  readonly journalPath: string
  private readonly journalRatio: number
  // Mutated in place only: what the last read saw, to decide between an append and a rewrite.
  private readonly seen = { generation: '', documentBytes: 0, journalBytes: 0 }

  constructor(ctx: Context, config: ProjectionCacheConfig = {}) {
    super(ctx)
    this.path = config.path ?? join(resolveDshHome(), 'storage', 'session_projcache.json')
    this.journalPath = `${this.path}.journal`
    this.journalRatio = config.journalRatio ?? 0.25
  }

  async readAll(): Promise<Map<string, ProjectionCheckpoint>> {
    return new Map(Object.entries((await this.load()).checkpoints))
  }

  /**
   * Appends the update to the journal when the document read last is still the current one and
   * the journal stays small; otherwise merges document and journal as they are on disk now
   * (under a lock beside the document, so two processes listing at once do not drop each other's
   * entries), writes the result as a new generation and removes the journal.
   */
  async write(checkpoints: ProjectionCheckpoint[], removed: string[]): Promise<void> {
    if (checkpoints.length === 0 && removed.length === 0) return
    const seen = this.seen
    const line: JournalLine = {
      generation: seen.generation,
      ...(checkpoints.length ? { put: checkpoints } : {}),
      ...(removed.length ? { drop: removed } : {}),
    }
    const text = JSON.stringify(line) + '\n'
    const budget = Math.max(JOURNAL_FLOOR, seen.documentBytes * this.journalRatio)
    if (seen.generation && this.journalRatio > 0 && seen.journalBytes + text.length <= budget) {
      // One write of one line: concurrent appenders do not interleave within it. A line that
      // lands after another process replaced the document names the old generation and is skipped.
      await appendFile(this.journalPath, text)
      seen.journalBytes += text.length
      return
    }
    await mkdir(dirname(this.path), { recursive: true })
    await withFileLock(this.path, { timeoutMs: 5000, staleMs: 30_000 }, async () => {
      const doc = await this.load()
      for (const id of removed) delete doc.checkpoints[id]
      for (const checkpoint of checkpoints) doc.checkpoints[checkpoint.sessionId] = checkpoint
      const generation = randomBytes(6).toString('hex')
      const body = JSON.stringify({ format: CACHE_FORMAT, generation, checkpoints: doc.checkpoints } satisfies Document)
      await replaceFile(this.path, body)
      // Lines appended to the old journal from here on name the old generation: skipped.
      await rm(this.journalPath, { force: true })
      Object.assign(this.seen, { generation, documentBytes: body.length, journalBytes: 0 })
    })
  }

  /** The document with its journal applied; empty when the document is missing or unreadable. */
  private async load(): Promise<Document> {
    Object.assign(this.seen, { generation: '', documentBytes: 0, journalBytes: 0 })
    let text: string
    try {
      text = await readFile(this.path, 'utf8')
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return empty()
      throw error
    }
    let doc: Partial<Document>
    try {
      doc = JSON.parse(text) as Partial<Document>
    } catch {
      return empty()
    }
    if (doc?.format !== CACHE_FORMAT || !doc.checkpoints || typeof doc.checkpoints !== 'object') return empty()
    const checkpoints: Document['checkpoints'] = {}
    for (const [id, entry] of Object.entries(doc.checkpoints)) {
      if (isCheckpoint(entry, id)) checkpoints[id] = entry
    }
    const generation = typeof doc.generation === 'string' ? doc.generation : ''
    let journalBytes = 0
    // A document without a generation (an older build wrote it) has no journal of its own.
    if (generation) {
      let journal = ''
      try {
        journal = await readFile(this.journalPath, 'utf8')
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error
      }
      journalBytes = journal.length
      for (const raw of journal.split('\n')) {
        const line = parseLine(raw)
        if (!line || line.generation !== generation) continue
        for (const id of line.drop ?? []) if (typeof id === 'string') delete checkpoints[id]
        for (const entry of line.put ?? [])
          if (isCheckpoint(entry, (entry as ProjectionCheckpoint | null)?.sessionId))
            checkpoints[entry.sessionId] = entry
      }
    }
    Object.assign(this.seen, { generation, documentBytes: text.length, journalBytes })
    return { format: CACHE_FORMAT, generation, checkpoints }
  }
}

/**
 * Replaces the document atomically (a temp file renamed over it) without fsync: it is a cache, so
 * a crash that loses or garbles it costs one rebuild, never a wrong listing.
 */
async function replaceFile(path: string, text: string): Promise<void> {
  const temp = join(dirname(path), `.${basename(path)}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`)
  try {
    await writeFile(temp, text, { flag: 'wx' })
    await rename(temp, path)
  } catch (error) {
    await rm(temp, { force: true })
    throw error
  }
}

function parseLine(raw: string): JournalLine | undefined {
  if (!raw.trim()) return undefined
  try {
    const line = JSON.parse(raw) as JournalLine
    if (!line || typeof line !== 'object' || typeof line.generation !== 'string') return undefined
    if (line.put !== undefined && !Array.isArray(line.put)) return undefined
    if (line.drop !== undefined && !Array.isArray(line.drop)) return undefined
    return line
  } catch {
    // A torn line (a crash mid-append): skipped.
    return undefined
  }
}

const empty = (): Document => ({ format: CACHE_FORMAT, checkpoints: {} })

function isCheckpoint(value: unknown, id: unknown): value is ProjectionCheckpoint {
  if (!value || typeof value !== 'object' || typeof id !== 'string') return false
  const c = value as Partial<ProjectionCheckpoint>
  return (
    c.sessionId === id &&
    Number.isInteger(c.events) &&
    (c.events as number) >= 0 &&
    !!c.units &&
    typeof c.units === 'object'
  )
}

export const name = '@dsh/session-projection-cache'
export default JsonProjectionCache
