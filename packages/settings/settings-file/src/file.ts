// FileSettings: `ctx.settings` over one YAML (or JSON) document on disk.
import { watch, type FSWatcher } from 'node:fs'
import { mkdir, readFile, stat } from 'node:fs/promises'
import { basename, dirname } from 'node:path'
import { declaredNamespaces } from './declared.ts'
import { type Context, Service } from 'cordis'
import Schema from 'schemastery'
import { homeLayout, resolveDshHome } from '@dsh/home-paths'
import {
  SettingsError,
  SettingsService,
  type SettingsChangeCause,
  type SettingsPatch,
  type SettingsRecord,
  type SettingsWriteOptions,
} from '@dsh/settings'
import type { Document } from 'yaml'
import { writeAtomic, withFileLock } from '@dsh/atomic-write'
import {
  applyPatch,
  applyReplace,
  documentData,
  lineOfPath,
  parseSettings,
  renderYaml,
  type DocumentProblem,
} from './document.ts'

/** What a boot hands its start checks (`app/check`, emitted by @dsh/app-boot once every row is up). */
export interface StartCheck {
  /** One line per problem; any line stops the launch (exit 1). */
  report(line: string): void
  /** The installation's package.json (the cli's): its dependencies are the installed plugins. */
  installBase?: string
  /** The dsh home: the plugins installed into its profiles count as installed too. */
  home?: string
}

declare module 'cordis' {
  interface Events {
    'app/check'(check: StartCheck): void
  }
}

export interface FileSettingsConfig {
  /** The settings file. Default: `<home>/settings.yaml`. A `.json` path is read and written as JSON. */
  path?: string
  /** The dsh home used for the default path. Default: `$DSH_HOME`, else `~/.dsh`. */
  home?: string
  /** Pick up external edits while running. */
  watch: boolean
  /** Quiet period after the last file-system event before re-reading. */
  debounceMs: number
  /** How long `update()` waits for another process's writer lock. */
  lockTimeoutMs: number
  /** A lock file older than this is treated as abandoned. */
  lockStaleMs: number
  /** Stop the launch on an unknown section or an invalid value (the start check). */
  checkAtStart: boolean
}

export const Config: Schema<Partial<FileSettingsConfig>, FileSettingsConfig> = Schema.object({
  path: Schema.string().description('The settings file. Default: <home>/settings.yaml; a .json path is kept as JSON.'),
  home: Schema.string().description('The dsh home for the default path. Default: $DSH_HOME, else ~/.dsh.'),
  watch: Schema.boolean().default(true).description('Reload on external edits.'),
  debounceMs: Schema.natural().default(100).description('Quiet period (ms) after a file event before re-reading.'),
  lockTimeoutMs: Schema.natural().default(5000).description('How long (ms) an update waits for another writer.'),
  lockStaleMs: Schema.natural().default(30_000).description('Age (ms) after which a leftover lock file is removed.'),
  checkAtStart: Schema.boolean()
    .default(true)
    .description('Stop the launch on an unknown section or an invalid value.'),
}) as Schema<Partial<FileSettingsConfig>, FileSettingsConfig>

/** The explicit defaulting step for the file location. */
export function resolveSettingsPath(
  config: Pick<FileSettingsConfig, 'path' | 'home'>,
  env: NodeJS.ProcessEnv = process.env,
): string {
  // resolveDshHome doubles as the path expander: `~`, `~/x` and relative paths become absolute.
  if (config.path) return resolveDshHome({ DSH_HOME: config.path })
  const home = config.home ? resolveDshHome({ DSH_HOME: config.home }) : resolveDshHome(env)
  return homeLayout(home).settings
}

interface State {
  /** The file text last accepted (or written); `undefined` before the first read. Empty for a missing file. */
  text: string | undefined
  /** The last malformed text reported, so one bad edit logs one error. */
  badText: string | undefined
  problem: SettingsError | undefined
  watcher: FSWatcher | undefined
  timer: NodeJS.Timeout | undefined
  disposed: boolean
  /** Serializes reads and writes of this process: each runs after the previous settles. */
  queue: Promise<unknown>
}

async function readText(path: string): Promise<string> {
  try {
    return await readFile(path, 'utf8')
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return ''
    throw error
  }
}

export class FileSettings extends SettingsService {
  static Config = Config

  readonly location: string
  readonly path: string
  private readonly config: FileSettingsConfig
  private readonly json: boolean
  private readonly file: State = {
    text: undefined,
    badText: undefined,
    problem: undefined,
    watcher: undefined,
    timer: undefined,
    disposed: false,
    queue: Promise.resolve(),
  }

  constructor(ctx: Context, config: FileSettingsConfig) {
    super(ctx)
    this.config = config
    this.path = resolveSettingsPath(config)
    this.location = this.path
    this.json = this.path.toLowerCase().endsWith('.json')
    ctx.effect(() => () => this.stop(), 'settings-file: watcher')
    // Once every row is up (so every plugin has claimed its section), a section nobody reads or a
    // value its schema refuses stops the launch with one located line, instead of silently
    // running on the defaults.
    ctx.on('app/check', (check) => {
      if (config.checkAtStart === false) return
      const document = this.namespaces()
      const claimed = new Set(this.claimed())
      // Installed packages are read only when a section is not claimed by a loaded plugin.
      const known = document.some((ns) => !claimed.has(ns)) ? declaredNamespaces(check.installBase, check.home) : []
      for (const problem of this.check(known)) check.report(this.formatProblem(problem))
    })
  }

  /** The line of a key in the file as last read (settings-file parses the text again: problems are rare). */
  protected override locate(path: readonly string[]): number | undefined {
    const text = this.file.text
    if (!text || this.json) return undefined
    const { doc, problem } = parseSettings(text)
    return problem ? undefined : lineOfPath(text, doc, path)
  }

  async [Service.init](): Promise<void> {
    await this.serial(() => this.reload('load'))
    if (this.config.watch) await this.startWatching()
  }

  /** The last problem with the file (malformed content), or `undefined` when the file is good. */
  get problem(): SettingsError | undefined {
    return this.file.problem
  }

  private serial<T>(task: () => Promise<T>): Promise<T> {
    const run = this.file.queue.then(() => {
      if (this.file.disposed) throw new SettingsError('DISPOSED', `settings for ${this.path} are no longer loaded`)
      return task()
    })
    this.file.queue = run.catch(() => {})
    return run
  }

  private describe(problem: DocumentProblem): string {
    const where = problem.line ? `${this.path}:${problem.line}${problem.column ? `:${problem.column}` : ''}` : this.path
    return `${where}: malformed settings file: ${problem.message}`
  }

  /** Reads the file; a good document is published; a bad one fails the load, and on reload is reported once and ignored. */
  private async reload(cause: SettingsChangeCause): Promise<void> {
    const text = await readText(this.path)
    if (text === this.file.text) return
    if (text.trim() === '') {
      // A missing or empty file: no sections, and no need to load the YAML parser for it.
      this.file.text = text
      this.file.badText = undefined
      this.file.problem = undefined
      this.publish({}, cause)
      return
    }
    const { doc, problem } = parseSettings(text)
    if (problem) {
      const error = new SettingsError('MALFORMED', this.describe(problem))
      // At load there is no good document to keep: fail the row (the launcher prints this one
      // line and exits 1) rather than run on no settings, which hides the mistake.
      if (this.file.text === undefined) throw error
      this.file.problem = error
      if (text !== this.file.badText) {
        this.file.badText = text
        this.ctx.logger('settings').error('%s; keeping the last good settings until it is fixed', error.message)
      }
      return
    }
    this.file.text = text
    this.file.badText = undefined
    this.file.problem = undefined
    this.publish(documentData(doc), cause)
  }

  private async startWatching(): Promise<void> {
    const dir = dirname(this.path)
    const file = basename(this.path)
    try {
      await mkdir(dir, { recursive: true })
      const watcher = watch(dir, { persistent: false }, (_event, name) => {
        if (name !== null && name.toString() !== file) return
        this.schedule()
      })
      watcher.on('error', (error) => this.ctx.logger('settings').warn('stopped watching %s: %s', dir, error.message))
      this.file.watcher = watcher
    } catch (error) {
      this.ctx
        .logger('settings')
        .warn('cannot watch %s for edits (%s); changes need a restart', dir, (error as Error).message)
    }
  }

  private schedule(): void {
    if (this.file.disposed) return
    clearTimeout(this.file.timer)
    this.file.timer = setTimeout(() => {
      this.file.timer = undefined
      this.serial(() => this.reload('reload')).catch((error: Error) => {
        if (error instanceof SettingsError && error.code === 'DISPOSED') return
        this.ctx.logger('settings').error('cannot read %s: %s', this.path, error.message)
      })
    }, this.config.debounceMs)
  }

  private stop(): void {
    this.file.disposed = true
    clearTimeout(this.file.timer)
    this.file.watcher?.close()
    this.file.watcher = undefined
  }

  /** Re-reads now instead of waiting for the watcher (for hosts without file events). */
  refresh(): Promise<void> {
    return this.serial(() => this.reload('reload'))
  }

  /**
   * The write path: under this process's queue and the cross-process lock, re-read the file (so
   * edits not yet observed are kept), edit the document, validate, write atomically, publish.
   */
  private write(namespace: string, edit: (doc: Document) => void, options?: SettingsWriteOptions): Promise<void> {
    return this.serial(async () => {
      await mkdir(dirname(this.path), { recursive: true })
      return withFileLock(
        this.path,
        { timeoutMs: this.config.lockTimeoutMs, staleMs: this.config.lockStaleMs },
        async () => {
          const text = await readText(this.path)
          const { doc, problem } = parseSettings(text)
          if (problem) {
            throw new SettingsError(
              'MALFORMED',
              `${this.describe(problem)}; fix it before settings can be saved (nothing was written)`,
            )
          }
          edit(doc)
          const data = documentData(doc)
          options?.validate?.(data[namespace] as SettingsRecord | undefined)
          const next = this.json ? `${JSON.stringify(data, null, 2)}\n` : renderYaml(doc)
          if (next !== text) {
            const mode = await stat(this.path).then(
              (info) => info.mode & 0o777,
              () => undefined,
            )
            try {
              await writeAtomic(this.path, next, mode)
            } catch (error) {
              throw new SettingsError('WRITE_FAILED', `cannot write ${this.path}: ${(error as Error).message}`, {
                cause: error,
              })
            }
          }
          this.file.text = next
          this.file.badText = undefined
          this.file.problem = undefined
          this.publish(data, 'update')
        },
      ).catch((error: Error & { code?: string }) => {
        if (error.code === 'LOCK_TIMEOUT') throw new SettingsError('LOCK_TIMEOUT', error.message)
        throw error
      })
    })
  }

  async update(namespace: string, patch: SettingsPatch, options?: SettingsWriteOptions): Promise<void> {
    this.checkWrite(namespace, patch, 'patch')
    return this.write(namespace, (doc) => applyPatch(doc, namespace, patch), options)
  }

  async replace(namespace: string, value: SettingsRecord | undefined, options?: SettingsWriteOptions): Promise<void> {
    this.checkWrite(namespace, value, 'value')
    return this.write(namespace, (doc) => applyReplace(doc, namespace, value), options)
  }
}
