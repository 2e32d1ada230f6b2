// The permission-preset table (`ctx.permissionPresets`): named pairs of sandbox mode and approval
// policy, a deployment default, and per-session overrides. Sandbox and approval plugins read their
// knob from here (`modeFor`, `policyFor`); UIs show the table as one selector.
import { type Context, Service } from 'cordis'
import Schema from 'schemastery'
import { APPROVAL_POLICIES, type ApprovalPolicy } from '@dsh/user-approval'
import { didYouMean } from '@dsh/settings'

/** The sandbox modes a preset may name (the `sandbox/mode` knob). */
export type SandboxMode = 'read-only' | 'workspace-write' | 'danger-full-access'
export const SANDBOX_MODES: readonly SandboxMode[] = ['read-only', 'workspace-write', 'danger-full-access']

export interface PermissionPreset {
  readonly name: string
  readonly mode: SandboxMode
  readonly approval: ApprovalPolicy
  readonly description: string
}

export interface PresetDefinition {
  mode: SandboxMode
  approval: ApprovalPolicy
  description?: string
}

export interface PermissionPresetsConfig {
  /** Preset used by sessions without an override, unless the environment variable names one. */
  default: string
  /** Environment variable that, when set and non-empty, overrides `default`. '' disables it. */
  env: string
  /** Extra presets, or replacements of built-in ones by name. */
  presets: Record<string, PresetDefinition>
}

export const BUILTIN_PRESETS: Readonly<Record<string, PresetDefinition & { description: string }>> = {
  'read-only': {
    mode: 'read-only',
    approval: 'ask',
    description:
      'Look, do not touch: commands and file tools may read but write nothing, no network. Anything more asks for approval.',
  },
  'workspace-write': {
    mode: 'workspace-write',
    approval: 'ask',
    description:
      'Commands run confined: writes only inside the workspace and temp dirs, no network. Stepping outside asks for approval.',
  },
  'danger-full-access': {
    mode: 'danger-full-access',
    approval: 'never',
    description: 'No confinement and no approval prompts: commands run with your full user rights.',
  },
}

/** The settings.yaml section this service reads (`permissions.default`). */
export const SETTINGS_NAMESPACE = 'permissions'

const PRESET_NAME = /^[a-z0-9][a-z0-9._-]{0,63}$/

export const PermissionPresetsConfig: Schema<PermissionPresetsConfig> = Schema.object({
  default: Schema.string()
    .default('workspace-write')
    .description('Preset of sessions without an override (unless the env variable names one).'),
  env: Schema.string()
    .default('DSH_PERMISSION_MODE')
    .description("Environment variable that overrides `default` when set; '' disables."),
  presets: Schema.dict(
    Schema.object({
      mode: Schema.union([...SANDBOX_MODES])
        .required()
        .description('Sandbox mode.'),
      approval: Schema.union([...APPROVAL_POLICIES])
        .required()
        .description('Approval policy.'),
      description: Schema.string().description('One line for selectors.'),
    }),
  )
    .default({})
    .description('Extra presets, or replacements of built-in ones by name.'),
})

export interface PresetChange {
  sessionId: string
  preset: PermissionPreset
  previous: PermissionPreset
}

declare module 'cordis' {
  interface Context {
    permissionPresets: PermissionPresetService
  }
  interface Events {
    /** A session's effective preset changed through `set()` or `clear()`. */
    'permission-presets/changed'(change: PresetChange): void
  }
}

export class PermissionPresetError extends Error {
  override name = 'PermissionPresetError'
}

export class PermissionPresetService extends Service {
  static Config = PermissionPresetsConfig
  private table = new Map<string, PermissionPreset>()
  private overrides = new Map<string, string>()
  private defaultName: string
  /** setDefault's preset: above every other source for the rest of this process. */
  private processDefault: string | undefined
  private sourceBelow = 'config'
  /**
   * Where the default came from: `config`, `settings` (the user's settings.yaml), the env
   * variable's name, or `process` (setDefault).
   */
  get defaultSource(): string {
    return this.processDefault !== undefined ? 'process' : this.sourceBelow
  }

  constructor(ctx: Context, config: PermissionPresetsConfig = PermissionPresetsConfig({} as PermissionPresetsConfig)) {
    super(ctx, 'permissionPresets')
    for (const [name, def] of Object.entries({ ...BUILTIN_PRESETS, ...config.presets })) {
      if (!PRESET_NAME.test(name))
        throw new PermissionPresetError(
          `permission-presets: invalid preset name ${JSON.stringify(name)} in presets (lowercase letters, digits, . _ -)`,
        )
      const description = def.description ?? `sandbox ${def.mode}, approval ${def.approval}`
      this.table.set(name, Object.freeze({ name, mode: def.mode, approval: def.approval, description }))
    }
    const fromEnv = config.env ? process.env[config.env]?.trim() : undefined
    if (fromEnv) {
      this.defaultName = this.check(fromEnv, `${config.env}`)
      this.sourceBelow = config.env
    } else {
      this.defaultName = this.check(config.default, 'config field "default"')
      this.sourceBelow = 'config'
    }
    // The user's settings.yaml section `permissions: { default: <preset> }` sits between the row's
    // config and the environment variable, and follows live edits while the settings service runs.
    if (!fromEnv) {
      const configured = this.defaultName
      ctx.inject(['settings'], (sctx) => {
        const schema = Schema.object({
          default: Schema.union(this.names()).description('Preset of sessions without an override.'),
        })
        const section = sctx.settings.section(SETTINGS_NAMESPACE, schema)
        const follow = (value: { default?: string }) => {
          this.defaultName = value.default ?? configured
          this.sourceBelow = value.default !== undefined ? 'settings' : 'config'
        }
        follow(section.value)
        section.onChange(follow)
        sctx.effect(() => () => follow({}))
      })
    }
    ctx.on(
      'session/deleted' as never,
      ((session: { id?: string }) => {
        if (session && typeof session.id === 'string') this.overrides.delete(session.id)
      }) as never,
    )
  }

  private check(name: string, where: string): string {
    if (this.table.has(name)) return name
    const guess = didYouMean(name, this.names())
    throw new PermissionPresetError(
      `unknown permission preset ${JSON.stringify(name)} (from ${where}); valid presets: ${this.names().join(', ')}${guess ? `; did you mean "${guess}"?` : ''}`,
    )
  }

  /** Preset names, sorted. */
  names(): string[] {
    return [...this.table.keys()].sort()
  }

  list(): PermissionPreset[] {
    return this.names().map((name) => this.table.get(name)!)
  }

  /** A preset by name, or undefined. */
  get(name: string): PermissionPreset | undefined {
    return this.table.get(name)
  }

  /**
   * The default: setDefault's preset, else the env variable, else settings.yaml
   * `permissions.default`, else config `default`.
   */
  get default(): PermissionPreset {
    return this.table.get(this.processDefault ?? this.defaultName)!
  }

  /**
   * Makes `name` the preset of sessions without an override for the rest of this process, above
   * every other source (a one-shot's `--permission-mode`: its session and whatever it starts, and
   * what plugins ask before that session exists, such as whether to prewarm the sandbox).
   * `undefined` removes it. Throws PermissionPresetError naming the valid presets for a bad name.
   */
  setDefault(name: string | undefined): void {
    this.processDefault = name === undefined ? undefined : this.check(name, 'permissionPresets.setDefault')
  }

  /** The session's preset: its override, else the default. No session: the default. */
  current(sessionId?: string): PermissionPreset {
    const name = sessionId !== undefined ? this.overrides.get(sessionId) : undefined
    return this.table.get(name ?? this.processDefault ?? this.defaultName)!
  }

  /** The `sandbox/mode` knob for a session. */
  modeFor(sessionId?: string): SandboxMode {
    return this.current(sessionId).mode
  }

  /** The `approval/policy` knob for a session. */
  policyFor(sessionId?: string): ApprovalPolicy {
    return this.current(sessionId).approval
  }

  /** Overrides a session's preset. Throws `PermissionPresetError` naming the valid presets for a bad name. */
  set(sessionId: string, name: string): PermissionPreset {
    if (typeof sessionId !== 'string' || sessionId === '')
      throw new TypeError('permissionPresets.set: sessionId must be a non-empty string')
    this.check(name, 'permissionPresets.set')
    const previous = this.current(sessionId)
    this.overrides.set(sessionId, name)
    const preset = this.current(sessionId)
    if (preset !== previous) this.ctx.emit('permission-presets/changed', { sessionId, preset, previous })
    return preset
  }

  /** Drops a session's override, returning it to the default. */
  clear(sessionId: string): PermissionPreset {
    const previous = this.current(sessionId)
    this.overrides.delete(sessionId)
    const preset = this.current(sessionId)
    if (preset !== previous) this.ctx.emit('permission-presets/changed', { sessionId, preset, previous })
    return preset
  }
}
