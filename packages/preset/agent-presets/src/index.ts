// @dsh/agent-presets: per-session agent composition (`ctx.agentPresets`).
//
// A preset is a directory holding one `agent.cordis.yml`: a list of plugin rows composed for each
// agent whose session names the preset. The rows are mounted under the agent's standing scope
// (`@dsh/scope`), so what they register (tools, prompt sections, a persona, a tool presentation,
// a tool set) exists for that agent only and is unloaded with it. A session records its preset as
// a `preset/selected` event and a resumed session is composed from the same preset again.
import { existsSync, readdirSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { type Context, Service, type Fiber } from 'cordis'
import Schema from 'schemastery'
import type { Agent, PreStepDecision, PreStepPayload } from '@dsh/agent'
import { PluginError, type Session } from '@dsh/session'
import { withStandingScope } from '@dsh/scope'
import { resolveDshHome } from '@dsh/home-paths'
import type {} from '@dsh/session-persistence'
import type {} from '@dsh/commands'
import { loadPresetFile, PRESET_FILE, PRESET_NAME, PresetError, type LoadedRow } from './load.ts'

export { loadPresetFile, PRESET_FILE, PresetError, type LoadedRow, type PresetRow } from './load.ts'

declare module '@dsh/session' {
  interface SessionEventMap {
    /** The preset this session is composed from (logged before its first step). */
    'preset/selected': { name: string }
  }
}

declare module 'cordis' {
  interface Context {
    agentPresets: AgentPresets
  }
}

export type PresetSource = 'builtin' | 'home' | 'config'

export interface PresetInfo {
  name: string
  dir: string
  file: string
  source: PresetSource
}

export interface AgentPresetsConfig {
  default: string
  env: string
  home?: string
  directories: string[]
}

/** The session's recorded preset, if any. */
export function presetOf(session: Pick<Session, 'last'>): string | undefined {
  return session.last('preset/selected')?.data.name
}

export const BUILTIN_DIR = fileURLToPath(new URL('../presets/', import.meta.url))

interface Composition {
  name: string
  fibers: Fiber<Context>[]
  ready: Promise<void>
  error?: Error
}

export class AgentPresets extends Service {
  static Config: Schema<AgentPresetsConfig> = Schema.object({
    default: Schema.string().default('standard').description('Preset of new sessions.'),
    env: Schema.string()
      .default('DSH_PRESET')
      .description('When this variable is set and non-empty it overrides `default`; "" disables.'),
    home: Schema.string().description('The dsh home whose presets/ directory is read; default: $DSH_HOME or ~/.dsh.'),
    directories: Schema.array(Schema.string())
      .default([])
      .description('More directories of presets (each preset a subdirectory); later ones shadow earlier ones.'),
  })

  static inject = ['agents']

  // Shared by caller views of the service (mutated in place, never reassigned).
  private readonly compositions = new Map<Agent, Composition>()
  private readonly state: { default: string }

  constructor(
    ctx: Context,
    public readonly config: AgentPresetsConfig,
  ) {
    super(ctx, 'agentPresets')
    const fromEnv = config.env ? process.env[config.env] : undefined
    const chosen = fromEnv ? fromEnv : config.default
    if (!this.get(chosen)) {
      throw new PresetError(
        `unknown agent preset "${chosen}" (from ${fromEnv ? config.env : 'config.default'}); available: ${this.names().join(', ')}`,
      )
    }
    this.state = { default: chosen }
    ctx.inject(['sessionPersistence'], (inner) => {
      inner.sessionPersistence.registerEventType('preset/selected')
    })
    ctx.on('agent/created', (agent) => this.compose(agent))
    ctx.on('agent/disposed', (agent) => void this.decompose(agent))
    ctx.on(
      'agent/pre-step',
      async (payload: PreStepPayload, next: () => Promise<PreStepDecision>) => {
        const composition = this.compositions.get(payload.agent)
        if (composition) {
          await composition.ready
          if (composition.error)
            throw new PluginError('agent-presets', `composing preset "${composition.name}"`, composition.error)
          if (presetOf(payload.agent.session) === undefined)
            payload.agent.session.append('preset/selected', { name: composition.name })
        }
        return next()
      },
      { prepend: true },
    )
    ctx.effect(
      () => () => {
        for (const agent of [...this.compositions.keys()]) void this.decompose(agent)
      },
      'agent-presets:compositions',
    )
    ctx.inject(['commands'], (inner) => {
      inner.commands.register({
        name: 'preset',
        description: 'Show the agent preset this session is composed from, and the presets there are.',
        run: (_args, { agent }) => {
          const current = this.compositions.get(agent)?.name ?? presetOf(agent.session) ?? this.state.default
          const others = this.list().map((p) => `${p.name} (${p.source})`)
          return `This session is composed from the preset "${current}". Presets: ${others.join(', ')}. A new session takes the default ("${this.state.default}"), --preset NAME or DSH_PRESET; a session keeps its preset.`
        },
      })
    })
  }

  /** The preset of new sessions. */
  get default(): string {
    return this.state.default
  }

  /** Makes `name` the preset of sessions created from now on; throws PresetError for an unknown name. */
  setDefault(name: string): void {
    if (!this.get(name)) throw new PresetError(`unknown agent preset "${name}"; available: ${this.names().join(', ')}`)
    this.state.default = name
  }

  /** Every preset, by name (a home or configured directory shadows a built-in of the same name). */
  list(): PresetInfo[] {
    const found = new Map<string, PresetInfo>()
    const home = join(this.dshHome(), 'presets')
    const roots: Array<[string, PresetSource]> = [
      [BUILTIN_DIR, 'builtin'],
      [home, 'home'],
      ...this.config.directories.map((dir) => [dir, 'config'] as [string, PresetSource]),
    ]
    for (const [root, source] of roots) {
      let names: string[]
      try {
        names = readdirSync(root)
      } catch {
        continue
      }
      for (const name of names.sort()) {
        const dir = join(root, name)
        const file = join(dir, PRESET_FILE)
        if (!PRESET_NAME.test(name) || !isDir(dir) || !existsSync(file)) continue
        found.set(name, { name, dir, file, source })
      }
    }
    return [...found.values()].sort((a, b) => (a.name < b.name ? -1 : 1))
  }

  private dshHome(): string {
    return this.config.home ?? this.ctx.get('homePaths')?.home ?? resolveDshHome()
  }

  names(): string[] {
    return this.list().map((preset) => preset.name)
  }

  get(name: string): PresetInfo | undefined {
    return this.list().find((preset) => preset.name === name)
  }

  /** Reads and checks a preset's rows; throws PresetError (one line naming file, row and field). */
  async load(name: string): Promise<LoadedRow[]> {
    const info = this.get(name)
    if (!info) throw new PresetError(`unknown agent preset "${name}"; available: ${this.names().join(', ')}`)
    return loadPresetFile(info.file, [], join(this.dshHome(), '.cache', 'presets'))
  }

  /**
   * Chooses the preset of a session that has not recorded one yet (a new session, before its first
   * step): logs `preset/selected` and recomposes the session's live agents. A session keeps its
   * preset: naming another one for a session that recorded one throws PresetError, as does an
   * unknown name.
   */
  select(session: Session, name: string): void {
    if (!this.get(name)) throw new PresetError(`unknown agent preset "${name}"; available: ${this.names().join(', ')}`)
    const recorded = presetOf(session)
    if (recorded === name) return
    if (recorded !== undefined)
      throw new PresetError(`session ${session.id} is composed from preset "${recorded}"; a session keeps its preset`)
    session.append('preset/selected', { name })
    for (const [agent, composition] of [...this.compositions]) {
      if (agent.session !== session || composition.name === name) continue
      const previous = this.decompose(agent)
      this.compositions.set(agent, this.pending(agent, name, previous))
    }
  }

  /** The preset an agent is composed from, and a promise that settles once its rows are mounted. */
  compositionOf(agent: Agent): { name: string; ready: Promise<void> } | undefined {
    const composition = this.compositions.get(agent)
    return (
      composition && {
        name: composition.name,
        ready: composition.ready.then(() => {
          if (composition.error) throw composition.error
        }),
      }
    )
  }

  private compose(agent: Agent): void {
    if (this.compositions.has(agent)) return
    this.compositions.set(agent, this.pending(agent, presetOf(agent.session) ?? this.state.default))
  }

  /** A composition of `name` for `agent`, mounted once `after` (an unmount) settled. */
  private pending(agent: Agent, name: string, after: Promise<void> = Promise.resolve()): Composition {
    const composition: Composition = { name, fibers: [], ready: Promise.resolve() }
    composition.ready = after
      .then(() => this.mount(agent, name, composition))
      .catch((error: Error) => {
        composition.error = error
        this.ctx.logger('agent-presets').warn('%s', error.message)
      })
    return composition
  }

  private async mount(agent: Agent, name: string, composition: Composition): Promise<void> {
    const rows = await this.load(name)
    const scoped = withStandingScope(this.ctx, agent.scope)
    for (const row of rows) {
      const missing = row.needs.filter((service) => this.ctx.get(service) === undefined)
      if (missing.length > 0) {
        throw new PresetError(
          `${this.get(name)!.file}: row ${row.id}: name: "${row.name}" needs the service${missing.length > 1 ? 's' : ''} ${missing.join(', ')}, which this profile does not provide`,
        )
      }
      if (this.compositions.get(agent) !== composition) return // disposed or replaced meanwhile
      // Cordis' plugin() is typed for statically known plugins; a row module is only known at run time.
      const fiber = scoped.plugin(row.plugin as never, (row.config ?? {}) as never)
      composition.fibers.push(fiber)
      try {
        await fiber
      } catch (error) {
        throw new PresetError(
          `${this.get(name)!.file}: row ${row.id}: "${row.name}" failed to start: ${(error as Error).message.split('\n')[0]}`,
        )
      }
    }
  }

  private async decompose(agent: Agent): Promise<void> {
    const composition = this.compositions.get(agent)
    if (!composition) return
    this.compositions.delete(agent)
    await composition.ready // a mount in progress stops at its next row once it sees it was replaced
    for (const fiber of composition.fibers.splice(0).reverse()) await fiber.dispose()
  }
}

function isDir(path: string): boolean {
  try {
    return statSync(path).isDirectory()
  } catch {
    return false
  }
}

export const name = 'agent-presets'
export default AgentPresets
