// Per-session web metadata that the session log does not hold: archived, the chosen model and
// reasoning effort, the permission preset. One small JSON file, written atomically.
import { readFile } from 'node:fs/promises'
import { dirname } from 'node:path'
import { mkdir } from 'node:fs/promises'
import { writeAtomic } from '@dsh/atomic-write'
import type { WireModel } from '@dsh/web-protocol'

export interface SessionMeta {
  archived?: boolean
  model?: WireModel
  permissionMode?: string
}

export class MetaStore {
  private rows = new Map<string, SessionMeta>()
  private chain: Promise<void> = Promise.resolve()
  /** Why the file could not be read, when it could not (the rows start empty then). */
  warning: string | undefined

  constructor(readonly path: string) {}

  async load(): Promise<void> {
    let text: string
    try {
      text = await readFile(this.path, 'utf8')
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return
      this.warning = `cannot read ${this.path}: ${(error as Error).message}`
      return
    }
    try {
      const parsed = JSON.parse(text) as { sessions?: Record<string, SessionMeta> }
      for (const [id, row] of Object.entries(parsed.sessions ?? {})) {
        if (row && typeof row === 'object') this.rows.set(id, row)
      }
    } catch (error) {
      this.warning = `${this.path} is not valid JSON (${(error as Error).message}); session metadata starts empty`
    }
  }

  get(id: string): SessionMeta {
    return this.rows.get(id) ?? {}
  }

  /** Merges `patch` into the row and writes the file (writes are serialized). */
  update(id: string, patch: SessionMeta): Promise<void> {
    this.rows.set(id, { ...this.get(id), ...patch })
    const text = JSON.stringify({ version: 1, sessions: Object.fromEntries(this.rows) }, null, 1) + '\n'
    this.chain = this.chain.then(async () => {
      await mkdir(dirname(this.path), { recursive: true })
      await writeAtomic(this.path, text)
    })
    return this.chain
  }

  flush(): Promise<void> {
    return this.chain.catch(() => {})
  }
}
