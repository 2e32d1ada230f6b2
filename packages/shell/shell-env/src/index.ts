// @dsh/shell-env: `ctx.shellEnv`, the registry of trusted `DSH_*` variables that shell tools set
// in every call's environment. The registry owns the built-in facts (DSH_HOME, DSH_SHELL,
// DSH_SESSION_ID); other plugins add variables whose registration unwinds with the plugin.
import { homedir } from 'node:os'
import { isAbsolute, join } from 'node:path'
import { type Context, Service } from 'cordis'
import Schema from 'schemastery'

declare module 'cordis' {
  interface Context {
    shellEnv: ShellEnvRegistry
  }
}

/** What a variable's value may depend on: the call it is collected for. */
export interface ShellEnvContext {
  sessionId?: string
  agentId?: string
  cwd?: string
}

/** A value, or a function of the call returning one (undefined: the variable is not set for that call). */
export type ShellEnvValue = string | ((context: ShellEnvContext) => string | undefined)

export interface ShellEnvVariable {
  /** `DSH_` followed by upper-case letters, digits and underscores. */
  name: string
  description: string
  value: ShellEnvValue
}

export interface ShellEnvListing {
  name: string
  description: string
  /** `shell-env` for built-ins, else the registering plugin's name when known. */
  owner: string
}

export interface ShellEnvConfig {
  home?: string
}

export const SHELL_ENV_NAME = /^DSH_[A-Z0-9_]+$/

interface Entry extends ShellEnvVariable {
  owner: string
}

export class ShellEnvRegistry extends Service {
  static Config: Schema<ShellEnvConfig> = Schema.object({
    home: Schema.string().description('Value of DSH_HOME. Default: $DSH_HOME, else ~/.dsh.'),
  })

  private readonly entries = new Map<string, Entry>()

  constructor(ctx: Context, config: ShellEnvConfig = {}) {
    super(ctx, 'shellEnv')
    const home = config?.home ?? process.env.DSH_HOME ?? join(homedir(), '.dsh')
    if (!isAbsolute(home)) throw new TypeError(`shell-env: home must be an absolute path, got ${JSON.stringify(home)}`)
    this.entries.set('DSH_HOME', {
      name: 'DSH_HOME',
      description: 'The dsh home directory.',
      value: home,
      owner: 'shell-env',
    })
    this.entries.set('DSH_SHELL', {
      name: 'DSH_SHELL',
      description: 'Set to 1 inside commands the agent runs.',
      value: '1',
      owner: 'shell-env',
    })
    this.entries.set('DSH_SESSION_ID', {
      name: 'DSH_SESSION_ID',
      description: 'Id of the session that ran the command.',
      value: (context) => context.sessionId,
      owner: 'shell-env',
    })
  }

  /**
   * Adds a variable. Throws on a name outside `DSH_*`, a missing description or value, and on a
   * name already registered (built-ins included). Undone by the disposer or when the calling plugin unloads.
   */
  register(variable: ShellEnvVariable): () => void {
    if (variable === null || typeof variable !== 'object')
      throw new TypeError('shellEnv.register: expected {name, description, value}')
    const { name, description, value } = variable
    if (typeof name !== 'string' || !SHELL_ENV_NAME.test(name)) {
      throw new TypeError(`shellEnv.register: invalid name ${JSON.stringify(name)} (must match ${SHELL_ENV_NAME})`)
    }
    if (typeof description !== 'string' || description.trim() === '')
      throw new TypeError(`shellEnv.register: ${name} needs a description`)
    if (typeof value !== 'string' && typeof value !== 'function')
      throw new TypeError(`shellEnv.register: ${name} value must be a string or a function`)
    if (typeof value === 'string') checkValue(name, value)
    const existing = this.entries.get(name)
    if (existing) throw new TypeError(`shellEnv.register: ${name} is already registered by ${existing.owner}`)
    const entries = this.entries
    const entry: Entry = { name, description, value, owner: this.ctx.fiber?.name || 'unknown' }
    const dispose = this.ctx.effect(() => {
      entries.set(name, entry)
      return () => {
        if (entries.get(name) === entry) entries.delete(name)
      }
    }, `shell-env:${name}`)
    return () => void dispose()
  }

  /** Every registered variable (not its value), sorted by name. */
  list(): ShellEnvListing[] {
    return [...this.entries.values()]
      .map(({ name, description, owner }) => ({ name, description, owner }))
      .sort((a, b) => a.name.localeCompare(b.name))
  }

  /**
   * The variables for one call. A value function that throws or returns a non-string is a bug of
   * its plugin and fails the collection loudly, naming the variable.
   */
  collect(context: ShellEnvContext = {}): Record<string, string> {
    const out: Record<string, string> = {}
    for (const entry of this.entries.values()) {
      let value: unknown
      if (typeof entry.value === 'string') value = entry.value
      else {
        try {
          value = entry.value(context)
        } catch (error) {
          throw new Error(`shell-env: ${entry.name} (from ${entry.owner}) failed: ${(error as Error).message}`)
        }
      }
      if (value === undefined) continue
      if (typeof value !== 'string')
        throw new TypeError(
          `shell-env: ${entry.name} (from ${entry.owner}) produced ${typeof value}, expected a string`,
        )
      checkValue(entry.name, value)
      out[entry.name] = value
    }
    return out
  }
}

function checkValue(name: string, value: string): void {
  if (value.includes('\0')) throw new TypeError(`shell-env: ${name} must not contain NUL characters`)
}

export const name = 'shell-env'
export default ShellEnvRegistry
