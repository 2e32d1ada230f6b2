// @dsh/session-projection-cache: the persisted projection cache (`ctx.sessionProjectionCache`). A
// document (`session_projcache.json`, by default under `$DSH_HOME/storage/`) holds a checkpoint per
// stored session, one line each; small updates are appended to a journal beside it
// (`<path>.journal`, one JSON line per update) and folded into the document when the journal grows.
// It is a cache, never a source of truth: an unreadable or foreign document reads as empty (and is
// rebuilt by the next listing), a journal line that is torn or of another document generation is
// skipped, and every entry is checked against its log by `@dsh/session-projection` before it is used.
//
// Format 2 (issue 42): a header line `{"format":2,"generation":...}`, then one line per session,
// tab-separated: `<id JSON> <events> <lastTime> (<unit JSON> <version> <state JSON>)*`. JSON text
// holds no raw tab or newline, so a reader splits lines and fields without parsing them, and a
// unit's state is parsed only when it is used: a listing that shows titles does not parse the stats
// of 10,000 sessions (format 1, one JSON document, was an 11 MB `JSON.parse` there). A format-1
// document is read whole and rewritten in format 2 by the same read.
import { randomBytes } from 'node:crypto'
import { appendFile, mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises'
import { basename, dirname, join } from 'node:path'
import type { Context } from 'cordis'
import Schema from 'schemastery'
import { resolveDshHome } from '@dsh/home-paths'
import { withFileLock } from '@dsh/atomic-write'
import { SessionProjectionCache, type ProjectionCheckpoint } from '@dsh/session-projection'

/** Format version of the document; format 1 is read and upgraded, any other reads as empty. */
export const CACHE_FORMAT = 2
/** The single-JSON-document format of earlier builds. */
const LEGACY_FORMAT = 1

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

/**
 * A unit checkpoint read from a format-2 line: the version is read at once, the state is parsed
 * from its JSON text each time it is asked for (so every caller gets its own copy, and a state
 * nobody asks for is never parsed). Unparsable text throws when the state is asked for; the
 * projection engine then rebuilds that session from its log.
 */
export class StoredUnit {
  constructor(
    readonly version: number,
    /** The state's JSON text as stored. */
    readonly text: string,
  ) {}
  get state(): unknown {
    return JSON.parse(this.text)
  }
  toJSON(): { version: number; state: unknown } {
    return { version: this.version, state: this.state }
  }
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
  private readonly seen = { format: 0, generation: '', documentBytes: 0, journalBytes: 0 }

  constructor(ctx: Context, config: ProjectionCacheConfig = {}) {
    super(ctx)
    this.path = config.path ?? join(resolveDshHome(), 'storage', 'session_projcache.json')
    this.journalPath = `${this.path}.journal`
    this.journalRatio = config.journalRatio ?? 0.25
  }

  async readAll(): Promise<Map<string, ProjectionCheckpoint>> {
    const doc = await this.load()
    if (doc.format === LEGACY_FORMAT) {
      // Upgraded once, so the next listing reads lines instead of parsing the whole document.
      await this.rewrite([], []).catch((error) =>
        this.ctx.emit(
          'session-projection/warning',
          `projection cache not upgraded to format ${CACHE_FORMAT}: ${(error as Error)?.message ?? String(error)}`,
        ),
      )
    }
    return new Map(Object.entries(doc.checkpoints))
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
    if (
      seen.generation &&
      seen.format === CACHE_FORMAT &&
      this.journalRatio > 0 &&
      seen.journalBytes + text.length <= budget
    ) {
      // One write of one line: concurrent appenders do not interleave within it. A line that
      // lands after another process replaced the document names the old generation and is skipped.
      await appendFile(this.journalPath, text)
      seen.journalBytes += text.length
      return
    }
    await this.rewrite(checkpoints, removed)
  }

  /** Merges the document and journal on disk now with the update and writes a new generation. */
  private async rewrite(checkpoints: ProjectionCheckpoint[], removed: string[]): Promise<void> {
    await mkdir(dirname(this.path), { recursive: true })
    await withFileLock(this.path, { timeoutMs: 5000, staleMs: 30_000 }, async () => {
      const doc = await this.load()
      for (const id of removed) delete doc.checkpoints[id]
      for (const checkpoint of checkpoints) doc.checkpoints[checkpoint.sessionId] = checkpoint
      const generation = randomBytes(6).toString('hex')
      const body = encodeDocument(generation, Object.values(doc.checkpoints))
      await replaceFile(this.path, body)
      // Lines appended to the old journal from here on name the old generation: skipped.
      await rm(this.journalPath, { force: true })
      Object.assign(this.seen, { format: CACHE_FORMAT, generation, documentBytes: body.length, journalBytes: 0 })
    })
  }

  /** The document with its journal applied; empty when the document is missing or unreadable. */
  private async load(): Promise<Document> {
    Object.assign(this.seen, { format: 0, generation: '', documentBytes: 0, journalBytes: 0 })
    let text: string
    try {
      text = await readFile(this.path, 'utf8')
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return empty()
      throw error
    }
    const doc = decodeDocument(text)
    if (!doc) return empty()
    const generation = doc.generation ?? ''
    const checkpoints = doc.checkpoints
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
    Object.assign(this.seen, { format: doc.format, generation, documentBytes: text.length, journalBytes })
    return { format: doc.format, generation, checkpoints }
  }
}

/** Format 2: the header line, then one line per checkpoint (see the top of this file). */
export function encodeDocument(generation: string, checkpoints: Iterable<ProjectionCheckpoint>): string {
  const parts = [JSON.stringify({ format: CACHE_FORMAT, generation }), '\n']
  for (const c of checkpoints) {
    parts.push(
      JSON.stringify(c.sessionId),
      '\t',
      String(c.events),
      '\t',
      c.lastTime === undefined ? '' : String(c.lastTime),
    )
    for (const [name, unit] of Object.entries(c.units)) {
      // A stored unit not asked for since it was read is written back from its text, unparsed.
      const state = unit instanceof StoredUnit ? unit.text : JSON.stringify(unit.state ?? null)
      parts.push('\t', JSON.stringify(name), '\t', String(unit.version), '\t', state)
    }
    parts.push('\n')
  }
  return parts.join('')
}

/**
 * The checkpoints of a document of format 2 (read line by line, states left as text) or format 1
 * (one JSON document); undefined for anything else. A malformed line is skipped (its session is
 * rebuilt from its log), a document whose last line is torn loses only that line.
 */
export function decodeDocument(text: string): Document | undefined {
  const firstEnd = text.indexOf('\n')
  let head: Partial<Document> | null
  try {
    head = JSON.parse(firstEnd < 0 ? text : text.slice(0, firstEnd)) as Partial<Document>
  } catch {
    return undefined
  }
  if (head?.format === LEGACY_FORMAT) return decodeLegacy(head)
  if (head?.format !== CACHE_FORMAT || typeof head.generation !== 'string' || firstEnd < 0) return undefined
  const checkpoints: Document['checkpoints'] = {}
  let at = firstEnd + 1
  while (at < text.length) {
    const end = text.indexOf('\n', at)
    if (end < 0) break // a torn last line (the file is replaced whole, so only by hand)
    const checkpoint = decodeLine(text.slice(at, end))
    if (checkpoint) checkpoints[checkpoint.sessionId] = checkpoint
    at = end + 1
  }
  return { format: CACHE_FORMAT, generation: head.generation, checkpoints }
}

function decodeLine(line: string): ProjectionCheckpoint | undefined {
  const fields = line.split('\t')
  if (fields.length < 3 || fields.length % 3 !== 0) return undefined
  const sessionId = jsonString(fields[0])
  const events = Number(fields[1])
  const lastTime = fields[2] === '' ? undefined : Number(fields[2])
  if (sessionId === undefined || !Number.isInteger(events) || events < 0) return undefined
  if (lastTime !== undefined && !Number.isFinite(lastTime)) return undefined
  const units: ProjectionCheckpoint['units'] = {}
  for (let i = 3; i < fields.length; i += 3) {
    const name = jsonString(fields[i])
    const version = Number(fields[i + 1])
    if (name === undefined || fields[i + 1] === '' || !Number.isFinite(version) || fields[i + 2] === '')
      return undefined
    units[name] = new StoredUnit(version, fields[i + 2])
  }
  return { sessionId, events, ...(lastTime !== undefined ? { lastTime } : {}), units }
}

/** A JSON string field; the common case (no escapes) without a parse. */
function jsonString(field: string): string | undefined {
  if (field.length < 2 || field.charCodeAt(0) !== 34 || field.charCodeAt(field.length - 1) !== 34) return undefined
  if (!field.includes('\\')) {
    const inner = field.slice(1, -1)
    return inner.includes('"') ? undefined : inner
  }
  try {
    const value = JSON.parse(field) as unknown
    return typeof value === 'string' ? value : undefined
  } catch {
    return undefined
  }
}

function decodeLegacy(doc: Partial<Document>): Document | undefined {
  if (!doc.checkpoints || typeof doc.checkpoints !== 'object') return undefined
  const checkpoints: Document['checkpoints'] = {}
  for (const [id, entry] of Object.entries(doc.checkpoints)) {
    if (isCheckpoint(entry, id)) checkpoints[id] = entry
  }
  return {
    format: LEGACY_FORMAT,
    ...(typeof doc.generation === 'string' ? { generation: doc.generation } : {}),
    checkpoints,
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
