// $DSH_HOME and the well-known files under it, as pure functions and as the `ctx.homePaths` service.
import { createRequire } from 'node:module'
import { homedir } from 'node:os'
import { isAbsolute, join, resolve } from 'node:path'
import { type Context, Service } from 'cordis'
import type SchemaModule from 'schemastery'

// schemastery is CommonJS: require() gives the same object an import would, without Node lexing
// the file for named exports first (~150 M instructions at every start, as every dsh bin loads
// this module; .agents/notes/boot-cuts-2026-12-07.md).
const Schema = createRequire(import.meta.url)('schemastery') as typeof SchemaModule

export const name = 'home-paths'

export * from './dotenv.ts'

/** `$DSH_HOME` when set and non-empty (a leading `~/` expands to the user's home), else `~/.dsh`. */
export function resolveDshHome(env: NodeJS.ProcessEnv = process.env, userHome: string = homedir()): string {
  const raw = env.DSH_HOME?.trim()
  if (!raw) return join(userHome, '.dsh')
  if (raw === '~') return userHome
  if (raw.startsWith('~/')) return join(userHome, raw.slice(2))
  return isAbsolute(raw) ? raw : resolve(raw)
}

/** Profile directory names: a letter or digit first, then letters, digits, `.`, `_`, `-`. */
export const PROFILE_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]*$/

export interface DshHomeLayout {
  home: string
  profiles: string
  sessions: string
  settings: string
  credentials: string
  env: string
  patch: string
  attachments: string
  skills: string
  /** `$DSH_HOME/profiles/<name>`; throws for a name that could escape the profiles directory. */
  profile(name: string): string
}

export function homeLayout(home: string): DshHomeLayout {
  return {
    home,
    profiles: join(home, 'profiles'),
    sessions: join(home, 'sessions'),
    settings: join(home, 'settings.yaml'),
    credentials: join(home, '.credentials.yaml'),
    env: join(home, '.env'),
    patch: join(home, 'cordis.patch.yml'),
    attachments: join(home, 'attachments'),
    skills: join(home, 'skills'),
    profile(name: string) {
      if (!PROFILE_NAME.test(name)) {
        throw new Error(`invalid profile name ${JSON.stringify(name)}: use letters, digits, ".", "_" or "-"`)
      }
      return join(home, 'profiles', name)
    },
  }
}

declare module 'cordis' {
  interface Context {
    homePaths: HomePaths
  }
}

export interface HomePathsConfig {
  home?: string
}

/** `ctx.homePaths`: the layout of the running $DSH_HOME. */
export class HomePaths extends Service implements DshHomeLayout {
  static Config: SchemaModule<HomePathsConfig> = Schema.object({
    home: Schema.string().description('The dsh home directory. Default: $DSH_HOME, else ~/.dsh.'),
  })

  readonly home: string
  readonly profiles: string
  readonly sessions: string
  readonly settings: string
  readonly credentials: string
  readonly env: string
  readonly patch: string
  readonly attachments: string
  readonly skills: string
  private readonly layout: DshHomeLayout

  constructor(ctx: Context, config: HomePathsConfig = {}) {
    super(ctx, 'homePaths')
    this.layout = homeLayout(config.home ? resolveDshHome({ DSH_HOME: config.home }) : resolveDshHome())
    this.home = this.layout.home
    this.profiles = this.layout.profiles
    this.sessions = this.layout.sessions
    this.settings = this.layout.settings
    this.credentials = this.layout.credentials
    this.env = this.layout.env
    this.patch = this.layout.patch
    this.attachments = this.layout.attachments
    this.skills = this.layout.skills
  }

  profile(name: string): string {
    return this.layout.profile(name)
  }
}

export default HomePaths
