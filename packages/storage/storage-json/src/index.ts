// @dsh/storage-json: the default `ctx.storage` provider: one human-readable JSON file per domain
// under `$DSH_HOME/storage/`, replaced atomically on every write.
import { mkdir, readdir, readFile, rename, rm } from 'node:fs/promises'
import { join } from 'node:path'
import type { Context } from 'cordis'
import Schema from 'schemastery'
import { writeAtomic } from '@dsh/atomic-write'
import { resolveDshHome } from '@dsh/home-paths'
import { StorageService, type DomainWrite, type LoadedDomain } from '@dsh/storage'

export const name = 'storage-json'

export interface JsonStorageConfig {
  /** The directory holding `<domain>.json`. Default: `<home>/storage`. */
  root?: string
  /** The dsh home for the default root. Default: `$DSH_HOME`, else `~/.dsh`. */
  home?: string
  /** Indentation of the written JSON (0 writes one line). */
  indent: number
}

export const Config: Schema<Partial<JsonStorageConfig>, JsonStorageConfig> = Schema.object({
  root: Schema.string().description('Directory of the domain files. Default: <home>/storage.'),
  home: Schema.string().description('The dsh home for the default root. Default: $DSH_HOME, else ~/.dsh.'),
  indent: Schema.natural().max(8).default(2).description('Indentation of the written JSON; 0 writes one line.'),
}) as Schema<Partial<JsonStorageConfig>, JsonStorageConfig>

/** The file format version written in every domain file. */
export const FORMAT_VERSION = 1

export function resolveStorageRoot(
  config: Pick<JsonStorageConfig, 'root' | 'home'>,
  env: NodeJS.ProcessEnv = process.env,
): string {
  // resolveDshHome doubles as the path expander: `~`, `~/x` and relative paths become absolute.
  if (config.root) return resolveDshHome({ DSH_HOME: config.root })
  return join(config.home ? resolveDshHome({ DSH_HOME: config.home }) : resolveDshHome(env), 'storage')
}

/** Parses a domain file; throws a one-line reason when it is not `{version: 1, entries: {...}}`. */
export function parseDomainFile(text: string): Map<string, unknown> {
  let data: unknown
  try {
    data = JSON.parse(text)
  } catch (error) {
    throw new Error(`not valid JSON (${(error as Error).message})`)
  }
  if (!data || typeof data !== 'object' || Array.isArray(data)) throw new Error('the top level is not a JSON object')
  const { version, entries } = data as { version?: unknown; entries?: unknown }
  if (version !== FORMAT_VERSION)
    throw new Error(`unsupported format version ${JSON.stringify(version)} (expected ${FORMAT_VERSION})`)
  if (!entries || typeof entries !== 'object' || Array.isArray(entries))
    throw new Error('"entries" is not a JSON object')
  return new Map(Object.entries(entries))
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM'
  }
}

export class JsonStorage extends StorageService {
  static Config = Config

  readonly root: string
  private readonly indent: number

  constructor(ctx: Context, config: JsonStorageConfig) {
    super(ctx)
    this.root = resolveStorageRoot(config)
    this.indent = config.indent ?? 2
  }

  location(domain: string): string {
    return join(this.root, `${domain}.json`)
  }

  protected async loadDomain(domain: string): Promise<LoadedDomain> {
    const path = this.location(domain)
    await this.removeOrphanTemps(domain)
    let text: string
    try {
      text = await readFile(path, 'utf8')
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return { entries: new Map() }
      throw error
    }
    try {
      return { entries: parseDomainFile(text) }
    } catch (error) {
      // Keep the damaged bytes for the user instead of overwriting them with the next write.
      const aside = `${path}.corrupt-${new Date().toISOString().replace(/[:.]/g, '-')}`
      await rename(path, aside)
      return {
        entries: new Map(),
        warning: `${path}: malformed storage file, ${(error as Error).message}; moved it to ${aside} and started "${domain}" empty`,
      }
    }
  }

  protected async writeDomain(domain: string, write: DomainWrite): Promise<void> {
    await mkdir(this.root, { recursive: true, mode: 0o700 })
    const body = { version: FORMAT_VERSION, entries: Object.fromEntries(write.snapshot) }
    const text = JSON.stringify(body, null, this.indent || undefined) + '\n'
    await writeAtomic(this.location(domain), text, 0o600)
  }

  /** Temp files of a writer killed mid-write (`.<domain>.json.<pid>.<hex>.tmp`, pid gone) are removed. */
  private async removeOrphanTemps(domain: string): Promise<void> {
    let names: string[]
    try {
      names = await readdir(this.root)
    } catch {
      return
    }
    const prefix = `.${domain}.json.`
    for (const name of names) {
      if (!name.startsWith(prefix) || !name.endsWith('.tmp')) continue
      const pid = Number(name.slice(prefix.length).split('.')[0])
      if (Number.isInteger(pid) && pid > 0 && pid !== process.pid && !alive(pid))
        await rm(join(this.root, name), { force: true })
    }
  }
}

export default JsonStorage
