// @dsh/workspace-worlds: where each session's commands and files live, chosen per workspace in one
// host. Every world (this machine's providers, the e2b sandbox's) is a full set of the four seams
// (`subprocess`, `fs`, `shell`, `sandbox`) mounted under an isolated name and handed to `ctx.worlds`
// by an export row (`@dsh/workspace-worlds/export`). The public seams are routers
// (`@dsh/workspace-worlds/routed`) that ask `ctx.worlds` which set serves the call: a session's tool
// calls and model steps run inside its world's scope (an AsyncLocalStorage store), so a session of a
// local workspace reaches only the local set and a session of an e2b workspace only the sandbox's.
import { AsyncLocalStorage } from 'node:async_hooks'
import { resolve, sep } from 'node:path'
import { type Context, Service } from 'cordis'
import Schema from 'schemastery'
import type {} from '@dsh/agent'
import type {} from '@dsh/tools'
import type {} from '@dsh/session'
import type { FileSystem } from '@dsh/fs'
import type { SandboxService } from '@dsh/sandbox'
import type { ShellExecutor } from '@dsh/shell'
import type { SubprocessService } from '@dsh/subprocess'
import {
  ApiError,
  worldsApply,
  worldsKeep,
  worldsReview,
  type ApiGatewayLike,
  type WireWorkspace,
  type WireWorldReview,
  type WorkspaceService,
} from '@dsh/workspace'

declare module 'cordis' {
  interface Context {
    worlds: WorldsService
  }
}

/** One world's providers of the four seams. */
export interface WorldServices {
  subprocess: SubprocessService
  fs: FileSystem
  shell: ShellExecutor
  sandbox: SandboxService
}

export interface WorldEntry {
  name: string
  /** One line for the workspace picker. */
  description: string
  services: WorldServices
  /**
   * Runs `fn` with the world's own per-folder state (the e2b world: the sandbox of that folder).
   * Absent: the world has one state for every folder (this machine).
   */
  enter?<T>(folder: string, fn: () => T): T
  /**
   * The change the world made to `folder` since it was last offered, saved as a patch file, to be
   * applied to that folder or kept. Absent: the world works on the folder itself (this machine).
   */
  offer?(folder: string): Promise<WorldOffer | undefined>
  /**
   * True when the calling async context was handed to this world explicitly, whatever its session's
   * folder says (the e2b world: a subagent child started with `world: "e2b"` runs in its lease).
   */
  claims?(): boolean
}

/** A change of a world's copy of a folder, offered to the user: apply it to the folder or keep the file. */
export interface WorldOffer extends WireWorldReview {
  settle(action: 'apply' | 'keep'): Promise<{ ok: boolean; line: string }>
}

export interface WorldsConfig {
  /** The world of a folder that is not a workspace, or a workspace that chose none (`dsh web --world NAME`). */
  default: string
}

export const Config: Schema<Partial<WorldsConfig>, WorldsConfig> = Schema.object({
  default: Schema.string()
    .pattern(/^[a-z][a-z0-9-]{0,31}$/)
    .default('local')
    .description('World of folders that chose none.'),
}) as Schema<Partial<WorldsConfig>, WorldsConfig>

/** A world lookup that found no provided world: one sentence, the names that exist. */
export class WorldError extends Error {
  override name = 'WorldError'
  readonly code = 'UNKNOWN_WORLD'
}

function inside(path: string, folder: string): boolean {
  return path === folder || path.startsWith(folder.endsWith(sep) ? folder : folder + sep)
}

export class WorldsService extends Service {
  static Config = Config
  readonly config: WorldsConfig
  /** Mutated in place (Cordis may hand callers a shadow of the service). */
  private readonly state: {
    worlds: Map<string, WorldEntry>
    /** Workspaces as last listed (path and chosen world), for the folder of a session. */
    workspaces: Array<Pick<WireWorkspace, 'path' | 'world'>>
    /** The world a session was first seen in: it keeps it for its life, whatever its folder's record says later. */
    pinned: Map<string, string>
    service?: WorkspaceService
    /** Who waits for a world to be provided (`provided`). */
    waiting: Map<string, Array<() => void>>
    /** The change offered for each folder and not settled yet (a new review replaces it). */
    offers: Map<string, WorldOffer>
    sessions?: Context['sessions']
  } = { worlds: new Map(), workspaces: [], pinned: new Map(), offers: new Map(), waiting: new Map() }
  private readonly scope = new AsyncLocalStorage<WorldEntry>()

  constructor(ctx: Context, config: Partial<WorldsConfig> = {}) {
    super(ctx, 'worlds')
    this.config = Config(config)
    ctx.inject(['workspaces'], (inner) => {
      const service = inner.workspaces
      this.state.service = service
      const refresh = () =>
        service.list().then(
          (list) => void (this.state.workspaces = list.map((w) => ({ path: w.path, world: w.world }))),
          () => {},
        )
      void refresh()
      inner.on('workspace/changed', (event) => {
        this.state.workspaces = event.workspaces.map((w) => ({ path: w.path, world: w.world }))
      })
      // Worlds provided before the workspace service came up are offered now.
      const offs = [...this.state.worlds.values()].map((entry) => this.offer(entry))
      return () => {
        for (const off of offs) off()
        this.state.service = undefined
      }
    })
    ctx.inject(['sessions'], (inner) => {
      this.state.sessions = inner.sessions
      return () => void (this.state.sessions = undefined)
    })
    // The web's approval of a session's change, for the folder of that session only.
    ctx.inject(['api'], (inner) => {
      const api = (inner as unknown as { api: ApiGatewayLike }).api
      api.register(worldsReview, async ({ sessionId }) => ({ review: (await this.review(sessionId)) ?? null }))
      api.register(worldsApply, ({ sessionId, file }) => this.settle(sessionId, file, 'apply'))
      api.register(worldsKeep, ({ sessionId, file }) => this.settle(sessionId, file, 'keep'))
    })
    // A session's model steps and tool calls run in its world. Outermost (prepended), so every
    // other listener and the tool body see the same world.
    ctx.on('agent/pre-step', (payload, next) => this.within(payload.agent.session.id, payload.agent.cwd, next), {
      prepend: true,
    })
    ctx.on('tools/execute', (payload, next) => this.within(payload.context.sessionId, payload.context.cwd, next), {
      prepend: true,
    })
  }

  private offer(entry: WorldEntry): () => void {
    const service = this.state.service
    if (!service || entry.name === 'local') return () => {}
    return service.registerWorld(
      { name: entry.name, description: entry.description },
      { isDefault: this.config.default === entry.name },
    )
  }

  /** Hands a world's providers to the routers (the export rows call this). Returns the disposer. */
  provide(entry: WorldEntry): () => void {
    if (this.state.worlds.has(entry.name))
      throw new TypeError(`worlds.provide: world "${entry.name}" is already provided`)
    this.state.worlds.set(entry.name, entry)
    for (const wake of this.state.waiting.get(entry.name) ?? []) wake()
    this.state.waiting.delete(entry.name)
    const off = this.offer(entry)
    return () => {
      off()
      if (this.state.worlds.get(entry.name) === entry) this.state.worlds.delete(entry.name)
    }
  }

  /** Resolves once the world `name` is provided (the routers wait for the default world). */
  provided(name: string): Promise<void> {
    if (this.state.worlds.has(name)) return Promise.resolve()
    return new Promise((resolve) => {
      const list = this.state.waiting.get(name) ?? []
      list.push(resolve)
      this.state.waiting.set(name, list)
    })
  }

  /** Names of the provided worlds. */
  names(): string[] {
    return [...this.state.worlds.keys()]
  }

  /** The workspace folder holding `path` (the deepest one), if any. */
  folderOf(path: string): Pick<WireWorkspace, 'path' | 'world'> | undefined {
    const abs = resolve(path)
    let best: Pick<WireWorkspace, 'path' | 'world'> | undefined
    for (const w of this.state.workspaces)
      if (inside(abs, w.path) && (!best || w.path.length > best.path.length)) best = w
    return best
  }

  /** The world a folder's sessions run in: its workspace's choice, else the host default. */
  worldOfFolder(path: string): string {
    return this.folderOf(path)?.world ?? this.config.default
  }

  /** The world of a session (pinned when first seen); `cwd` is its working directory. */
  worldOfSession(sessionId: string | undefined, cwd: string): string {
    if (sessionId === undefined) return this.worldOfFolder(cwd)
    let name = this.state.pinned.get(sessionId)
    if (name === undefined) {
      name = this.worldOfFolder(cwd)
      this.state.pinned.set(sessionId, name)
    }
    return name
  }

  private entry(name: string): WorldEntry {
    const entry = this.state.worlds.get(name)
    if (!entry)
      throw new WorldError(
        `the world "${name}" is not available on this host (available: ${this.names().join(', ') || 'none'})`,
      )
    return entry
  }

  /** Runs `fn` in the world of a session (or of the folder `cwd`), with that world's per-folder state. */
  within<T>(sessionId: string | undefined, cwd: string, fn: () => T): T {
    // A child its parent sent to another world (subagent `world: "e2b"`) runs there, even from a
    // local workspace; otherwise the session's own world.
    const claimed = [...this.state.worlds.values()].find((entry) => entry.claims?.())
    const entry = claimed ?? this.entry(this.worldOfSession(sessionId, cwd))
    const folder = this.folderOf(cwd)?.path ?? resolve(cwd)
    return this.scope.run(entry, () => (entry.enter ? entry.enter(folder, fn) : fn()))
  }

  /**
   * Runs `fn` with the providers that serve a call: the calling session's world inside its scope.
   * Outside any scope (a harness call), the world of `sessionId` when the call names its session,
   * else of the workspace folder `path` lies in, else the default; the world's per-folder state
   * (the e2b world: that folder's sandbox) is entered for the call, so its result is of that folder.
   */
  route<T>(path: string | undefined, sessionId: string | undefined, fn: (services: WorldServices) => T): T {
    const scoped = this.scope.getStore()
    if (scoped) return fn(scoped.services)
    let where = path
    let name: string | undefined
    if (sessionId !== undefined) {
      const cwd = this.state.sessions?.get(sessionId)?.cwd
      if (cwd !== undefined) where = cwd
      name = this.state.pinned.get(sessionId) ?? (cwd !== undefined ? this.worldOfSession(sessionId, cwd) : undefined)
    }
    if (where === undefined) return fn(this.entry(name ?? this.config.default).services)
    const entry = this.entry(name ?? this.worldOfFolder(where))
    if (!entry.enter) return fn(entry.services)
    const folder = this.folderOf(where)?.path ?? resolve(where)
    return entry.enter(folder, () => fn(entry.services))
  }

  /** The providers of the calling scope's world (the default outside any session), for plain reads. */
  current(): WorldServices {
    return this.scope.getStore()?.services ?? this.entry(this.config.default).services
  }

  /** The folder and world of a live session (its workspace folder, else its cwd). */
  private sessionPlace(sessionId: string): { folder: string; entry: WorldEntry } {
    const session = this.state.sessions?.get(sessionId)
    if (!session)
      throw new ApiError('SESSION_NOT_FOUND', `session ${JSON.stringify(sessionId)} is not open on this host`, {
        field: 'sessionId',
      })
    const entry = this.entry(this.worldOfSession(sessionId, session.cwd))
    return { folder: this.folderOf(session.cwd)?.path ?? resolve(session.cwd), entry }
  }

  /**
   * The change the session's world made to its folder since the last review (the e2b world: the
   * sandbox of that workspace), saved as a patch file; undefined for a world that works on the
   * folder itself, no sandbox yet, or no change. Replaces that folder's unsettled review.
   */
  async review(sessionId: string): Promise<WireWorldReview | undefined> {
    const { folder, entry } = this.sessionPlace(sessionId)
    const offer = entry.offer ? await entry.offer(folder) : undefined
    if (!offer) return undefined
    this.state.offers.set(folder, offer)
    const { settle: _settle, ...review } = offer
    return {
      ...review,
      patch:
        review.patch.length > 65_536
          ? `${review.patch.slice(0, 65_536)}\n[... cut; the file holds all of it]\n`
          : review.patch,
    }
  }

  /** Applies the session's reviewed patch to its own folder (checked, all or nothing), or keeps the file. */
  async settle(sessionId: string, file: string, action: 'apply' | 'keep'): Promise<{ ok: boolean; line: string }> {
    const { folder } = this.sessionPlace(sessionId)
    const offer = this.state.offers.get(folder)
    if (!offer || offer.file !== file)
      throw new ApiError(
        'REVIEW_NOT_FOUND',
        `${file} is not the change offered now for ${folder} (settled already, or replaced by a newer review)`,
        { status: 409, field: 'file' },
      )
    this.state.offers.delete(folder)
    return offer.settle(action)
  }

  /** The name of the world the calling scope runs in (undefined outside a session's scope). */
  scoped(): string | undefined {
    return this.scope.getStore()?.name
  }
}

export const name = 'workspace-worlds'
export default WorldsService
