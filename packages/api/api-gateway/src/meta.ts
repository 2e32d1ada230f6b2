// Per-session web metadata that the session log does not hold: archived, the chosen model and
// reasoning effort, the permission preset. Kept in memory (reads are synchronous) and written
// through to a backend: the `web-sessions` domain of ctx.storage when that hub is mounted, else
// one small JSON file written atomically.
import { mkdir, readFile } from 'node:fs/promises'
import { dirname } from 'node:path'
import Schema from 'schemastery'
import { writeAtomic } from '@dsh/atomic-write'
import { optionalObject, WireModelSchema, type WireModel } from '@dsh/web-protocol'

export interface SessionMeta {
  archived?: boolean
  model?: WireModel
  permissionMode?: string
  /** Removed from the web host (`sessions.remove`): listed nowhere, opened never. */
  removed?: boolean
  /** Queued prompts and unanswered requests held in memory (reported if the host dies). */
  pending?: {
    queued: string[]
    approvals: Array<{ requestId: string; kind: string; title: string }>
    questions: Array<{ requestId: string; questions: string[] }>
  }
}

export const SessionMetaSchema: Schema<SessionMeta> = Schema.object({
  archived: Schema.boolean(),
  model: optionalObject(WireModelSchema),
  permissionMode: Schema.string(),
  removed: Schema.boolean(),
  pending: optionalObject(
    Schema.object({
      queued: Schema.array(Schema.string()).default([]),
      approvals: Schema.array(
        Schema.object({
          requestId: Schema.string().required(),
          kind: Schema.string().required(),
          title: Schema.string().required(),
        }),
      ).default([]),
      questions: Schema.array(
        Schema.object({ requestId: Schema.string().required(), questions: Schema.array(Schema.string()).default([]) }),
      ).default([]),
    }),
  ),
}) as Schema<SessionMeta>

export interface MetaBackend {
  /** Where the rows live, for messages. */
  readonly location: string
  load(): Promise<{ rows: Array<[string, SessionMeta]>; warning?: string }>
  /** `rows` is the whole table after the change. */
  write(id: string, row: SessionMeta, rows: ReadonlyMap<string, SessionMeta>): Promise<void>
}

/** The JSON file backend: `{version: 1, sessions: {<id>: row}}`. */
export function fileBackend(path: string): MetaBackend {
  return {
    location: path,
    async load() {
      let text: string
      try {
        text = await readFile(path, 'utf8')
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === 'ENOENT') return { rows: [] }
        return { rows: [], warning: `cannot read ${path}: ${(error as Error).message}` }
      }
      try {
        const parsed = JSON.parse(text) as { sessions?: Record<string, SessionMeta> }
        return { rows: Object.entries(parsed.sessions ?? {}).filter(([, row]) => row && typeof row === 'object') }
      } catch (error) {
        return {
          rows: [],
          warning: `${path} is not valid JSON (${(error as Error).message}); session metadata starts empty`,
        }
      }
    },
    async write(_id, _row, rows) {
      await mkdir(dirname(path), { recursive: true })
      await writeAtomic(path, JSON.stringify({ version: 1, sessions: Object.fromEntries(rows) }, null, 1) + '\n')
    },
  }
}

interface StorageDomain<T> {
  entries(): Promise<Array<[string, T]>>
  set(key: string, value: T): Promise<T>
}

/** The ctx.storage backend: one entry per session in the `web-sessions` domain. */
export function storageBackend(storage: { domain<T>(name: string, schema: Schema<T>): StorageDomain<T> }): MetaBackend {
  const domain = storage.domain('web-sessions', SessionMetaSchema)
  return {
    location: 'storage domain "web-sessions"',
    async load() {
      try {
        return { rows: await domain.entries() }
      } catch (error) {
        return { rows: [], warning: `cannot read storage domain "web-sessions": ${(error as Error).message}` }
      }
    },
    async write(id, row) {
      await domain.set(id, row)
    },
  }
}

export class MetaStore {
  private readonly rows = new Map<string, SessionMeta>()
  private chain: Promise<void> = Promise.resolve()
  /** Why the rows could not be read, when they could not (they start empty then). */
  warning: string | undefined

  constructor(readonly backend: MetaBackend) {}

  async load(): Promise<void> {
    const { rows, warning } = await this.backend.load()
    for (const [id, row] of rows) this.rows.set(id, row)
    this.warning = warning
  }

  get(id: string): SessionMeta {
    return this.rows.get(id) ?? {}
  }

  /** Merges `patch` into the row and writes it (writes are serialized; a failure rejects). */
  update(id: string, patch: SessionMeta): Promise<void> {
    const row = { ...this.get(id), ...patch }
    this.rows.set(id, row)
    const snapshot = new Map(this.rows)
    const write = this.chain.then(() => this.backend.write(id, row, snapshot))
    this.chain = write.catch(() => {})
    return write
  }

  flush(): Promise<void> {
    return this.chain
  }
}
