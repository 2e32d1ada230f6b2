// LocalCredentials: `ctx.credentials` over the inherited environment, a project `.env`,
// `$DSH_HOME/.env` and `$DSH_HOME/.credentials.yaml`, in that precedence.
import { mkdir, readFile, stat } from 'node:fs/promises'
import { dirname, join, resolve } from 'node:path'
import { type Context, Service } from 'cordis'
import Schema from 'schemastery'
import {
  homeLayout,
  PROJECT_ENV_ALLOW_VAR,
  PROJECT_ENV_CREDENTIALS,
  projectEnvAllowlist,
  resolveDshHome,
} from '@dsh/home-paths'

/** Variable names that hold secrets by their shape. */
const SECRET_NAME = /(?:^|_)(?:KEY|TOKEN|SECRET|PASSWORD)$/
import {
  CredentialError,
  CredentialsService,
  checkCredentialName,
  type CredentialDescription,
  type CredentialLayer,
} from '@dsh/credentials'
import { writeAtomic } from '@dsh/atomic-write'
import {
  credentialsFileLayer,
  dotenvLayer,
  envLayer,
  insecureMessage,
  parseCredentialsFile,
  type Layer,
  type LayerRead,
} from './layers.ts'

export interface LocalCredentialsConfig {
  /** The dsh home holding `.env` and `.credentials.yaml`. Default: `$DSH_HOME`, else `~/.dsh`. */
  home?: string
  /** The project directory whose `.env` is read. Default: the process working directory. */
  cwd?: string
  /** Read the project `.env` at all. It supplies only allowlisted credential names. */
  projectEnv: boolean
  /** Credential names the project `.env` may supply besides the built-in provider keys. */
  projectEnvAllow: string[]
  /** Override for the credentials file. Default: `<home>/.credentials.yaml`. */
  credentialsFile?: string
  /** Read every file layer once at start: a malformed, insecure or unreadable one fails the row. */
  checkAtStart: boolean
  /** Credential names besides the built-in provider keys that the credentials file may hold as they are. */
  knownNames: string[]
}

export const Config: Schema<Partial<LocalCredentialsConfig>, LocalCredentialsConfig> = Schema.object({
  home: Schema.string().description(
    'The dsh home holding .env and .credentials.yaml. Default: $DSH_HOME, else ~/.dsh.',
  ),
  cwd: Schema.string().description('Project directory whose .env is read. Default: the working directory.'),
  projectEnv: Schema.boolean().default(true).description('Read the project .env (allowlisted credential names only).'),
  projectEnvAllow: Schema.array(Schema.string())
    .default([])
    .description(
      'Extra credential names the project .env may supply (names ending in _KEY, _TOKEN, _SECRET or _PASSWORD).',
    ),
  credentialsFile: Schema.string().description('The credentials file. Default: <home>/.credentials.yaml.'),
  checkAtStart: Schema.boolean()
    .default(true)
    .description('Check every credential file at start; a malformed, insecure or unreadable one fails the row.'),
  knownNames: Schema.array(Schema.string())
    .default([])
    .description(
      'Credential names besides the provider keys: the start check takes an entry close to a known name for a typo unless it is listed.',
    ),
}) as Schema<Partial<LocalCredentialsConfig>, LocalCredentialsConfig>

export interface ResolvedPaths {
  projectEnv?: string
  homeEnv: string
  credentialsFile: string
}

/** The explicit defaulting step for every file this provider reads. */
export function resolvePaths(
  config: Partial<LocalCredentialsConfig>,
  env: NodeJS.ProcessEnv = process.env,
  cwd = process.cwd(),
): ResolvedPaths {
  const layout = homeLayout(config.home ? resolveDshHome({ DSH_HOME: config.home }) : resolveDshHome(env))
  // resolveDshHome doubles as the path expander: `~`, `~/x` and relative paths become absolute.
  const expand = (path: string) => resolveDshHome({ DSH_HOME: path })
  return {
    projectEnv: config.projectEnv === false ? undefined : join(config.cwd ? expand(config.cwd) : resolve(cwd), '.env'),
    homeEnv: layout.env,
    credentialsFile: config.credentialsFile ? expand(config.credentialsFile) : layout.credentials,
  }
}

export class LocalCredentials extends CredentialsService {
  static Config = Config

  readonly paths: ResolvedPaths
  /** The names the project `.env` layer reads. */
  readonly projectEnvAllow: ReadonlySet<string>
  private readonly layers: Layer[]
  /** Serializes this process's writes to the credentials file. */
  private readonly writes = { tail: Promise.resolve() as Promise<unknown> }

  constructor(
    ctx: Context,
    private readonly config: Partial<LocalCredentialsConfig> = {},
  ) {
    super(ctx)
    this.paths = resolvePaths(config)
    // Extra names come from trusted places only: this row's config and the environment (which a
    // project .env never supplies a DSH_* variable to). A bad name fails the row at load.
    this.projectEnvAllow = new Set([
      ...projectEnvAllowlist(config.projectEnvAllow ?? [], 'config.projectEnvAllow'),
      ...projectEnvAllowlist(process.env[PROJECT_ENV_ALLOW_VAR]),
    ])
    this.layers = [
      envLayer(process.env),
      ...(this.paths.projectEnv
        ? [
            dotenvLayer(
              'project-env',
              this.paths.projectEnv,
              `${this.paths.projectEnv} (project; provider credentials only)`,
              this.projectEnvAllow,
            ),
          ]
        : []),
      dotenvLayer('home-env', this.paths.homeEnv, this.paths.homeEnv),
      credentialsFileLayer(
        this.paths.credentialsFile,
        new Set([...PROJECT_ENV_CREDENTIALS, ...this.projectEnvAllow, ...(config.knownNames ?? [])]),
      ),
    ]
  }

  /**
   * With `checkAtStart`, a broken file, an entry that is no credential name or misspells a known
   * one, or a value that is not one line of text stops the launch with its one-line error (file,
   * line, name, what is valid; never the value) instead of surfacing at the first model request, where it would look like a network
   * failure. Lookups still read the files each time, so later edits are seen.
   */
  async [Service.init](): Promise<void> {
    if (this.config.checkAtStart === false) return
    for (const layer of this.layers) {
      if (layer.info.id === 'env') continue
      const read = await layer.read()
      if (read.status === 'refused' || read.status === 'malformed') throw read.error
      if (read.status === 'ok') {
        for (const value of read.values.values()) if (value instanceof CredentialError) throw value
        if (read.problems?.length) throw read.problems[0]
      }
    }
  }

  async get(name: string): Promise<string | undefined> {
    checkCredentialName(name)
    // Layers are read lazily in precedence order: a higher hit never touches lower files.
    for (const layer of this.layers) {
      const read = await layer.read()
      if (read.status === 'absent') continue
      if (read.status !== 'ok') throw read.error
      const value = read.values.get(name)
      if (value instanceof CredentialError) throw value
      if (value !== undefined) return value
    }
    return undefined
  }

  /**
   * Every credential value this provider can hand out, for scrubbing output: from each layer, the
   * names a project `.env` may supply plus names shaped like secrets (`*_KEY`, `*_TOKEN`,
   * `*_SECRET`, `*_PASSWORD`); every entry of `.credentials.yaml`. Unreadable layers are skipped.
   */
  override async knownValues(): Promise<string[]> {
    const out = new Set<string>()
    for (const layer of this.layers) {
      const read = await layer.read().catch(() => undefined)
      if (read?.status !== 'ok') continue
      const everything = layer.info.id === 'credentials-file'
      for (const [name, value] of read.values) {
        if (typeof value !== 'string') continue
        if (
          everything ||
          this.projectEnvAllow.has(name) ||
          PROJECT_ENV_CREDENTIALS.includes(name) ||
          SECRET_NAME.test(name)
        )
          out.add(value)
      }
    }
    return [...out]
  }

  async describe(name: string): Promise<CredentialDescription> {
    checkCredentialName(name)
    const layers: CredentialLayer[] = []
    const holding: { layer: CredentialLayer; value: string }[] = []
    for (const layer of this.layers) {
      const read: LayerRead = await layer.read()
      const info: CredentialLayer = { ...layer.info, status: read.status }
      if (read.status === 'refused' || read.status === 'malformed') info.problem = read.error.message
      if (read.status === 'ok') {
        const value = read.values.get(name)
        if (value instanceof CredentialError) {
          info.status = 'malformed'
          info.problem = value.message
        } else if (value !== undefined) holding.push({ layer: info, value })
      }
      layers.push(info)
    }
    // The launcher copies `.env` entries into process.env (without overriding). An environment
    // value identical to a `.env` file's is attributed to that file: `get()` returns the same
    // value either way, and the file is where the user would change it.
    const dotenv = holding.find((entry) => entry.layer.id === 'project-env' || entry.layer.id === 'home-env')
    if (holding[0]?.layer.id === 'env' && dotenv && dotenv.value === holding[0].value) holding.shift()
    const found = holding.map((entry) => entry.layer)
    return { name, configured: found.length > 0, source: found[0], shadowed: found.slice(1), layers }
  }

  /** Writes to the credentials file (created 0600). A higher layer holding the name still wins on `get`. */
  async set(name: string, value: string): Promise<void> {
    checkCredentialName(name)
    if (typeof value !== 'string' || value === '') {
      throw new CredentialError(
        'INVALID_VALUE',
        `credentials.set(${name}): the value must be a non-empty string (use unset to remove it)`,
        { credential: name },
      )
    }
    await this.edit(name, (doc) => void doc.set(name, value))
  }

  async unset(name: string): Promise<void> {
    checkCredentialName(name)
    await this.edit(name, (doc) => void doc.delete(name))
  }

  private edit(name: string, change: (doc: ReturnType<typeof parseCredentialsFile>['doc']) => void): Promise<void> {
    const path = this.paths.credentialsFile
    const run = this.writes.tail.then(async () => {
      let text = ''
      try {
        const info = await stat(path)
        if (info.mode & 0o077)
          throw new CredentialError('INSECURE_FILE', insecureMessage(path, info.mode), { path, credential: name })
        text = await readFile(path, 'utf8')
      } catch (error) {
        if (error instanceof CredentialError) throw error
        if ((error as NodeJS.ErrnoException).code !== 'ENOENT') {
          throw new CredentialError(
            'MALFORMED_FILE',
            `cannot read ${path} (${(error as NodeJS.ErrnoException).code ?? 'error'})`,
            { path },
          )
        }
      }
      const { doc, error } = parseCredentialsFile(path, text)
      if (error)
        throw new CredentialError(error.code, `${error.message}; nothing was written`, { path, credential: name })
      if (doc.contents === null) doc.contents = doc.createNode({}) as never
      change(doc)
      await mkdir(dirname(path), { recursive: true, mode: 0o700 })
      // Created 0600 and chmod-ed explicitly: the umask must never widen a secret file.
      await writeAtomic(path, doc.toString({ lineWidth: 0 }), 0o600)
    })
    this.writes.tail = run.catch(() => {})
    return run
  }
}
