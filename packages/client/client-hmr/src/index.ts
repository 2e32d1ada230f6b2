// @dsh/client-hmr (host half): while at least one page holds the host stream open, watches the
// files of every served browser half (the `./client` directories that @dsh/frontend-static serves)
// and, when one changed on disk, or a row's half appeared or went away, publishes
// `client-plugins/changed` on the host stream. The browser half (`./client`) then unloads and
// re-imports exactly those halves, without a page reload. With no page connected it holds no
// watcher and reads nothing; a file event only schedules a fingerprint compare, which decides.
import { type Dirent, type FSWatcher, watch } from 'node:fs'
import { readdir, stat } from 'node:fs/promises'
import { join } from 'node:path'
import type { Context } from 'cordis'
import Schema from 'schemastery'
import type {} from '@dsh/frontend-static'
import type {} from '@dsh/api-gateway'
import { CLIENT_PLUGINS_CHANGED, type ClientPluginsChanged, type HmrPlugin } from './shared.ts'

export * from './shared.ts'

export const name = '@dsh/client-hmr'
export const inject = ['frontendStatic']

declare module 'cordis' {
  interface Events {
    /** One fingerprint scan of the served halves began (`packages`: the halves it reads). */
    'client-hmr/scan'(packages: string[]): void
  }
}

/** How deep under a half's directory files are fingerprinted and directories watched. */
const MAX_DEPTH = 4

export interface Config {
  /** Poll interval (ms), used only when the file system cannot be watched. */
  pollMs: number
  /** Quiet time after a file event before the halves are compared (ms): a rebuild writes many files. */
  debounceMs: number
  /** Most files looked at per client directory (a half is a few bundles). */
  maxFiles: number
}
export const Config: Schema<Config> = Schema.object({
  pollMs: Schema.natural()
    .min(100)
    .default(1000)
    .description('Poll interval (ms), used only when the served client directories cannot be watched.'),
  debounceMs: Schema.natural()
    .max(10_000)
    .default(100)
    .description('Quiet time after a file event before the halves are compared (ms).'),
  maxFiles: Schema.natural().min(1).default(200).description('Most files looked at per client directory.'),
})

/** A fingerprint of the files under `dir` (names, sizes, modification times); '' when unreadable. */
export async function fingerprint(dir: string, maxFiles: number): Promise<string> {
  const parts: string[] = []
  const walk = async (at: string, depth: number): Promise<void> => {
    if (parts.length >= maxFiles) return
    let names: string[]
    try {
      names = (await readdir(at)).sort()
    } catch {
      return
    }
    for (const entry of names) {
      if (parts.length >= maxFiles) return
      const path = join(at, entry)
      try {
        const info = await stat(path)
        if (info.isDirectory()) {
          if (depth < MAX_DEPTH) await walk(path, depth + 1)
        } else if (info.isFile()) parts.push(`${path.slice(dir.length)}:${info.size}:${Math.floor(info.mtimeMs)}`)
      } catch {
        // Removed between the listing and the stat: the next poll sees the new state.
      }
    }
  }
  await walk(dir, 0)
  // FNV-1a over the listing: short, stable, enough to tell two states apart.
  let hash = 0x811c9dc5
  const text = parts.join('\n')
  for (let i = 0; i < text.length; i++) {
    hash ^= text.charCodeAt(i)
    hash = Math.imul(hash, 0x01000193)
  }
  return parts.length === 0 ? '' : (hash >>> 0).toString(36)
}

/** `dir` and its subdirectories down to MAX_DEPTH levels, at most `max` of them. */
export async function directoriesOf(dir: string, max: number): Promise<string[]> {
  const out: string[] = []
  const walk = async (at: string, depth: number): Promise<void> => {
    if (out.length >= max) return
    out.push(at)
    if (depth >= MAX_DEPTH) return
    let entries: Dirent[]
    try {
      entries = await readdir(at, { withFileTypes: true })
    } catch {
      return
    }
    for (const entry of entries.sort((a, b) => (a.name < b.name ? -1 : 1)))
      if (entry.isDirectory()) await walk(join(at, entry.name), depth + 1)
  }
  await walk(dir, 0)
  return out
}

export function apply(ctx: Context, config: Config): void {
  ctx.inject(['api'], (inner) => {
    const logger = inner.logger('client-hmr')
    /** The last compared state; kept across idle spells so a page that reconnects gets what changed. */
    let last: Map<string, HmrPlugin> | undefined
    let active = false
    let running = false
    let again = false
    let scans = 0
    /** Watched directory -> its watcher and inode (a directory replaced by a new one is re-armed). */
    const watchers = new Map<string, { watcher: FSWatcher; ino: number }>()
    let debounce: ReturnType<typeof setTimeout> | undefined
    let poll: ReturnType<typeof setInterval> | undefined

    const schedule = () => {
      if (!active) return
      if (debounce) clearTimeout(debounce)
      debounce = setTimeout(() => {
        debounce = undefined
        void check()
      }, config.debounceMs)
      debounce.unref?.()
    }

    const closeWatchers = () => {
      for (const { watcher } of watchers.values()) watcher.close()
      watchers.clear()
    }

    /** Falls back to polling every `pollMs` (a watch limit reached, a file system without events). */
    const startPolling = (reason: string) => {
      closeWatchers()
      if (poll || !active) return
      logger.warn('cannot watch the client directories (%s); polling every %d ms', reason, config.pollMs)
      poll = setInterval(() => void check(), config.pollMs)
      poll.unref?.()
    }

    /** Watches every directory of every served half (Node 20 has no recursive watch on Linux). */
    const rewatch = async (dirs: string[]) => {
      if (poll) return
      const wanted = new Set<string>()
      for (const dir of dirs) for (const sub of await directoriesOf(dir, config.maxFiles)) wanted.add(sub)
      if (!active) return
      for (const [path, { watcher }] of watchers)
        if (!wanted.has(path)) {
          watcher.close()
          watchers.delete(path)
        }
      for (const path of wanted) {
        let ino: number
        try {
          ino = (await stat(path)).ino
        } catch {
          continue
        }
        if (!active) return
        const held = watchers.get(path)
        // Same directory as before: keep its watcher. Replaced (removed and made again): re-arm.
        if (held?.ino === ino) continue
        held?.watcher.close()
        watchers.delete(path)
        try {
          const watcher = watch(path, { persistent: false }, () => schedule())
          // A watched directory removed or renamed: drop it; the next check re-arms what exists.
          watcher.on('error', () => {
            watcher.close()
            if (watchers.get(path)?.watcher === watcher) watchers.delete(path)
            schedule()
          })
          watchers.set(path, { watcher, ino })
        } catch (error) {
          const code = (error as NodeJS.ErrnoException).code
          if (code === 'ENOENT' || code === 'ENOTDIR') continue
          return startPolling((error as Error).message)
        }
      }
    }

    const scan = async (): Promise<Map<string, HmrPlugin>> => {
      const dirs = new Map(inner.frontendStatic.clientPlugins().map((c) => [c.package, c.dir]))
      const served = inner.frontendStatic.manifest().plugins.filter((entry) => dirs.has(entry.package))
      // Watch first, then read: a write landing between the two is still seen.
      await rewatch(served.map((entry) => dirs.get(entry.package)!))
      scans++
      inner.emit(
        'client-hmr/scan',
        served.map((entry) => entry.package),
      )
      logger.debug('hot reload scan %d: %s', scans, served.map((entry) => entry.package).join(', ') || '(no halves)')
      const now = new Map<string, HmrPlugin>()
      for (const entry of served) {
        now.set(entry.package, {
          package: entry.package,
          url: entry.url,
          version: await fingerprint(dirs.get(entry.package)!, config.maxFiles),
        })
      }
      return now
    }

    const compare = async () => {
      const now = await scan()
      const before = last
      last = now
      if (!before) return
      const event: ClientPluginsChanged = { type: CLIENT_PLUGINS_CHANGED, load: [], unload: [] }
      for (const [pkg, plugin] of now) {
        const old = before.get(pkg)
        if (!old || old.version !== plugin.version || old.url !== plugin.url) event.load.push(plugin)
      }
      for (const pkg of before.keys()) if (!now.has(pkg)) event.unload.push(pkg)
      if (event.load.length === 0 && event.unload.length === 0) return
      logger.info('browser halves changed: %s', [...event.load.map((p) => p.package), ...event.unload].join(', '))
      inner.api.publishHost(event)
    }

    const check = async () => {
      // One compare at a time (a slow disk must not stack them); an event during one runs another.
      if (running) {
        again = true
        return
      }
      running = true
      try {
        do {
          again = false
          try {
            await compare()
          } catch (error) {
            logger.warn('check failed: %s', (error as Error).message)
          }
        } while (again && active)
      } finally {
        running = false
      }
    }

    const start = () => {
      if (active) return
      active = true
      logger.debug('a page connected: watching the browser halves')
      void check()
    }
    const stop = () => {
      if (!active) return
      active = false
      if (debounce) clearTimeout(debounce)
      if (poll) clearInterval(poll)
      debounce = poll = undefined
      closeWatchers()
      logger.debug('no page connected: stopped watching the browser halves')
    }
    const follow = (count: number) => (count > 0 ? start() : stop())

    ctx.effect(() => {
      const offClients = inner.on('api/host-clients', follow)
      // A row with a half enabled or removed changes no file: any plugin's state change re-checks.
      const offStatus = inner.on('internal/status', () => schedule())
      follow(inner.api.hostClientCount)
      return () => {
        offClients()
        offStatus()
        stop()
      }
    }, 'client-hmr: watch while a page is connected')
  })
}

export default { name, inject, Config, apply }
