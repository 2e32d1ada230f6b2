// @dsh/client-hmr (host half): polls the files of every served browser half (the `./client`
// directories that @dsh/frontend-static serves) and, when one changed on disk, or a row's half
// appeared or went away, publishes `client-plugins/changed` on the host stream. The browser half
// (`./client`) then unloads and re-imports exactly those halves, without a page reload. With no
// rebuild rewriting client files the poll sees no change and publishes nothing.
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

export interface Config {
  /** How often the served client directories are checked (ms). */
  pollMs: number
  /** Most files looked at per client directory (a half is a few bundles). */
  maxFiles: number
}
export const Config: Schema<Config> = Schema.object({
  pollMs: Schema.natural()
    .min(100)
    .default(1000)
    .description('How often the served client directories are checked (ms).'),
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
          if (depth < 4) await walk(path, depth + 1)
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

export function apply(ctx: Context, config: Config): void {
  ctx.inject(['api'], (inner) => {
    let last: Map<string, HmrPlugin> | undefined
    let running = false
    const scan = async (): Promise<Map<string, HmrPlugin>> => {
      const dirs = new Map(inner.frontendStatic.clientPlugins().map((c) => [c.package, c.dir]))
      const now = new Map<string, HmrPlugin>()
      for (const entry of inner.frontendStatic.manifest().plugins) {
        const dir = dirs.get(entry.package)
        if (!dir) continue
        now.set(entry.package, {
          package: entry.package,
          url: entry.url,
          version: await fingerprint(dir, config.maxFiles),
        })
      }
      return now
    }
    const tick = async () => {
      // One scan at a time (a slow disk must not stack them).
      if (running) return
      running = true
      try {
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
        ctx
          .logger('client-hmr')
          .info('browser halves changed: %s', [...event.load.map((p) => p.package), ...event.unload].join(', '))
        inner.api.publishHost(event)
      } catch (error) {
        ctx.logger('client-hmr').warn('poll failed: %s', (error as Error).message)
      } finally {
        running = false
      }
    }
    ctx.effect(() => {
      const timer = setInterval(() => void tick(), config.pollMs)
      timer.unref?.()
      void tick()
      return () => clearInterval(timer)
    }, 'client-hmr: poll')
  })
}

export default { name, inject, Config, apply }
