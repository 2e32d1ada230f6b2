// `ctx.workspaces`: the user's workspaces (named host directories) in a stable order, stored in the
// `workspace` storage domain. Errors are ApiErrors so every caller (gateway or in-process) gets the
// same code, message and field.
import { randomBytes } from 'node:crypto'
import type { Stats } from 'node:fs'
import { stat } from 'node:fs/promises'
import { homedir } from 'node:os'
import { basename, isAbsolute, join, resolve } from 'node:path'
import { type Context, Service } from 'cordis'
import Schema from 'schemastery'
import { brand, type Brand } from '@dsh/brand'
import { ApiError } from '@dsh/web-protocol'
import type { Domain } from '@dsh/storage'
import { MAX_WORKSPACE_NAME, type WireWorkspace, type WireWorld, type WorkspaceChangedEvent } from './contract.ts'

export type WorkspaceId = Brand<string, 'WorkspaceId'>

export interface Workspace extends WireWorkspace {
  id: WorkspaceId
}

/** What one entry of the `workspace` domain holds (the key is the id). */
export interface StoredWorkspace {
  name: string
  path: string
  createdAt: number
  /** Sort key of the user order; ties fall back to creation time. */
  position: number
  /** The world chosen when it was added (absent: the host's default). */
  world?: string
}

export const StoredWorkspaceSchema: Schema<StoredWorkspace> = Schema.object({
  name: Schema.string().required(),
  path: Schema.string().required(),
  createdAt: Schema.natural().required(),
  position: Schema.number().required(),
  world: Schema.string(),
})

export const WORKSPACE_DOMAIN = 'workspace'

export interface WorkspaceServiceConfig {
  /** The storage domain holding the workspaces. */
  domain: string
  /** Most workspaces one host keeps (a bound on the list every client fetches). */
  maxWorkspaces: number
}

export const Config: Schema<Partial<WorkspaceServiceConfig>, WorkspaceServiceConfig> = Schema.object({
  domain: Schema.string().default(WORKSPACE_DOMAIN).description('Storage domain of the workspace records.'),
  maxWorkspaces: Schema.natural().min(1).default(1000).description('Most workspaces kept.'),
}) as Schema<Partial<WorkspaceServiceConfig>, WorkspaceServiceConfig>

declare module 'cordis' {
  interface Context {
    workspaces: WorkspaceService
  }
  interface Events {
    /** After every durable change (create, rename, reorder, remove). */
    'workspace/changed'(event: WorkspaceChangedEvent): void
  }
}

const CONTROL = /[\u0000-\u001f\u007f]/

function checkName(raw: unknown, field = 'name'): string {
  const name = typeof raw === 'string' ? raw.trim() : ''
  if (!name) throw new ApiError('INVALID_PARAMS', `${field}: a workspace name must not be empty`, { field })
  if (name.length > MAX_WORKSPACE_NAME)
    throw new ApiError(
      'INVALID_PARAMS',
      `${field}: a workspace name is at most ${MAX_WORKSPACE_NAME} characters (got ${name.length})`,
      { field },
    )
  if (CONTROL.test(name))
    throw new ApiError('INVALID_PARAMS', `${field}: a workspace name must not contain control characters`, { field })
  return name
}

/** `~` and `~/x` expand to the home directory; anything else must be absolute. Returns a normalized path. */
export function normalizeWorkspacePath(raw: unknown, home: string = homedir()): string {
  if (typeof raw !== 'string' || raw.trim() === '')
    throw new ApiError('INVALID_PARAMS', 'path: give the absolute path of a directory', { field: 'path' })
  if (raw.includes('\0')) throw new ApiError('INVALID_PARAMS', 'path: contains a NUL character', { field: 'path' })
  const text = raw.trim()
  const expanded = text === '~' ? home : text.startsWith('~/') ? join(home, text.slice(2)) : text
  if (!isAbsolute(expanded))
    throw new ApiError(
      'INVALID_PARAMS',
      `path: ${JSON.stringify(text)} is not absolute; give the full path of a directory`,
      { field: 'path' },
    )
  return resolve(expanded)
}

interface State {
  /** Serializes mutations so check-then-write steps (duplicate path, order) cannot interleave. */
  queue: Promise<unknown>
  /** Worlds a workspace may choose besides `local` (registered by the plugin that runs them). */
  worlds: Map<string, WireWorld>
  /** The world of a workspace that chose none (`setDefaultWorld`). */
  defaultWorld: string
}

/** This machine: the world every host has. */
export const LOCAL_WORLD: WireWorld = { name: 'local', description: 'this machine' }

export class WorkspaceService extends Service {
  static inject = ['storage']
  static Config = Config

  private readonly domain: Domain<StoredWorkspace>
  private readonly config: WorkspaceServiceConfig
  private readonly state: State = {
    queue: Promise.resolve(),
    worlds: new Map([[LOCAL_WORLD.name, LOCAL_WORLD]]),
    defaultWorld: LOCAL_WORLD.name,
  }

  constructor(ctx: Context, config: Partial<WorkspaceServiceConfig> = {}) {
    super(ctx, 'workspaces')
    this.config = { domain: WORKSPACE_DOMAIN, maxWorkspaces: 1000, ...config }
    this.domain = ctx.storage.domain(this.config.domain, StoredWorkspaceSchema)
  }

  async [Service.init](): Promise<void> {
    // Load now, so a damaged file is reported at startup rather than at the first click.
    await this.domain.entries()
  }

  private serial<T>(task: () => Promise<T>): Promise<T> {
    const run = this.state.queue.then(task)
    this.state.queue = run.catch(() => {})
    return run
  }

  private async records(): Promise<Array<[WorkspaceId, StoredWorkspace]>> {
    const entries = (await this.domain.entries()) as Array<[WorkspaceId, StoredWorkspace]>
    return entries.sort(([, a], [, b]) => a.position - b.position || a.createdAt - b.createdAt)
  }

  private static wire(id: WorkspaceId, stored: StoredWorkspace): Workspace {
    return {
      id,
      name: stored.name,
      path: stored.path,
      createdAt: stored.createdAt,
      ...(stored.world ? { world: stored.world } : {}),
    }
  }

  /**
   * Lets workspaces choose `world` (the plugin that runs it calls this; `local` is always there).
   * Returns the disposer. `isDefault` makes it the world of workspaces that chose none.
   */
  registerWorld(world: WireWorld, options: { isDefault?: boolean } = {}): () => void {
    if (!/^[a-z][a-z0-9-]{0,31}$/.test(world?.name ?? ''))
      throw new TypeError(`workspaces.registerWorld: bad world name ${JSON.stringify(world?.name)}`)
    if (this.state.worlds.has(world.name))
      throw new TypeError(`workspaces.registerWorld: world "${world.name}" is already registered`)
    this.state.worlds.set(world.name, { name: world.name, description: world.description })
    if (options.isDefault) this.state.defaultWorld = world.name
    return () => {
      this.state.worlds.delete(world.name)
      if (this.state.defaultWorld === world.name) this.state.defaultWorld = LOCAL_WORLD.name
    }
  }

  /** The worlds a workspace may choose (`local` first) and the default of a workspace that chose none. */
  worlds(): { worlds: WireWorld[]; default: string } {
    return { worlds: [...this.state.worlds.values()], default: this.state.defaultWorld }
  }

  /** The world a workspace's sessions run in: its own choice, else the host's default. */
  worldOf(workspace: Pick<WireWorkspace, 'world'>): string {
    return workspace.world ?? this.state.defaultWorld
  }

  private checkWorld(raw: unknown): string {
    const known = [...this.state.worlds.keys()].join(', ')
    if (typeof raw !== 'string' || !this.state.worlds.has(raw))
      throw new ApiError('INVALID_PARAMS', `world: unknown world ${JSON.stringify(raw)} (known: ${known})`, {
        field: 'world',
      })
    return raw
  }

  /** Every workspace in the user order. */
  async list(): Promise<Workspace[]> {
    return (await this.records()).map(([id, stored]) => WorkspaceService.wire(id, stored))
  }

  /** One workspace, or `undefined` for an unknown id. */
  async get(id: string): Promise<Workspace | undefined> {
    if (typeof id !== 'string' || !id || id.length > 256) return undefined
    const stored = await this.domain.get(id)
    return stored && WorkspaceService.wire(brand<'WorkspaceId'>(id), stored)
  }

  private async require(id: string): Promise<Workspace> {
    const workspace = await this.get(id)
    if (!workspace) throw new ApiError('WORKSPACE_NOT_FOUND', `no workspace ${JSON.stringify(id)}`, { field: 'id' })
    return workspace
  }

  /**
   * Adds a workspace for an existing directory (appended last). A directory that is already a
   * workspace is not added twice: its workspace comes back with `created: false`.
   */
  create(params: { path: string; name?: string; world?: string }): Promise<{ workspace: Workspace; created: boolean }> {
    return this.serial(async () => {
      const path = normalizeWorkspacePath(params?.path)
      const name = params.name === undefined ? undefined : checkName(params.name)
      const world = params.world === undefined ? undefined : this.checkWorld(params.world)
      let info: Stats
      try {
        info = await stat(path)
      } catch (error) {
        const code = (error as NodeJS.ErrnoException).code
        if (code === 'ENOENT' || code === 'ENOTDIR')
          throw new ApiError('PATH_NOT_FOUND', `path: ${path} does not exist`, { status: 400, field: 'path' })
        throw new ApiError('PATH_UNREADABLE', `path: cannot read ${path} (${code ?? (error as Error).message})`, {
          status: 400,
          field: 'path',
        })
      }
      if (!info.isDirectory())
        throw new ApiError('NOT_A_DIRECTORY', `path: ${path} is a file, not a directory`, { field: 'path' })
      const records = await this.records()
      const existing = records.find(([, stored]) => stored.path === path)
      if (existing) {
        // A folder keeps the world it was added with: its sessions, sandbox and patches belong there.
        if (world !== undefined && this.worldOf(existing[1]) !== world)
          throw new ApiError(
            'WORKSPACE_WORLD',
            `world: ${path} is already a workspace in the ${this.worldOf(existing[1])} world; remove it and add it again to move it to ${world}`,
            { status: 409, field: 'world' },
          )
        return { workspace: WorkspaceService.wire(existing[0], existing[1]), created: false }
      }
      if (records.length >= this.config.maxWorkspaces) {
        throw new ApiError(
          'TOO_MANY_WORKSPACES',
          `this host already keeps ${records.length} workspaces (the limit); remove one first`,
          { status: 409 },
        )
      }
      const id = brand<'WorkspaceId'>(`ws_${randomBytes(8).toString('hex')}`)
      const last = records.length ? records[records.length - 1]![1].position : 0
      const stored: StoredWorkspace = {
        name: name ?? (basename(path) || path),
        path,
        createdAt: Date.now(),
        position: last + 1,
        ...(world !== undefined ? { world } : {}),
      }
      await this.domain.set(id, stored)
      const workspace = WorkspaceService.wire(id, stored)
      await this.changed('created', workspace)
      return { workspace, created: true }
    })
  }

  rename(id: string, name: string): Promise<Workspace> {
    return this.serial(async () => {
      const checked = checkName(name)
      const current = await this.require(id)
      const stored = (await this.domain.get(id))!
      if (stored.name === checked) return current
      await this.domain.set(id, { ...stored, name: checked })
      const workspace = { ...current, name: checked }
      await this.changed('renamed', workspace)
      return workspace
    })
  }

  /** Puts `ids` first, in that order; the others keep their relative order after them. */
  reorder(ids: string[]): Promise<Workspace[]> {
    return this.serial(async () => {
      if (!Array.isArray(ids))
        throw new ApiError('INVALID_PARAMS', 'ids: expected an array of workspace ids', { field: 'ids' })
      const records = await this.records()
      const known = new Map(records)
      const seen = new Set<string>()
      for (const [index, id] of ids.entries()) {
        if (seen.has(id))
          throw new ApiError('INVALID_PARAMS', `ids[${index}]: ${JSON.stringify(id)} is listed twice`, {
            field: `ids.${index}`,
          })
        if (!known.has(id as WorkspaceId))
          throw new ApiError('WORKSPACE_NOT_FOUND', `ids[${index}]: no workspace ${JSON.stringify(id)}`, {
            field: `ids.${index}`,
          })
        seen.add(id)
      }
      const order = [...(ids as WorkspaceId[]), ...records.map(([id]) => id).filter((id) => !seen.has(id))]
      const changes = order
        .map((id, index) => ({ id, stored: known.get(id)!, position: index + 1 }))
        .filter(({ stored, position }) => stored.position !== position)
        .map(({ id, stored, position }) => ({ key: id as string, value: { ...stored, position } }))
      if (changes.length) {
        await this.domain.update(changes)
        await this.changed('reordered')
      }
      return this.list()
    })
  }

  /** Forgets a workspace; its directory and its sessions are not touched. */
  remove(id: string): Promise<Workspace> {
    return this.serial(async () => {
      const workspace = await this.require(id)
      await this.domain.delete(id)
      await this.changed('removed', workspace)
      return workspace
    })
  }

  private async changed(reason: WorkspaceChangedEvent['reason'], workspace?: Workspace): Promise<void> {
    const event: WorkspaceChangedEvent = {
      type: 'workspace/changed',
      reason,
      ...(workspace ? { workspace } : {}),
      workspaces: await this.list(),
    }
    this.ctx.emit('workspace/changed', event)
  }
}
