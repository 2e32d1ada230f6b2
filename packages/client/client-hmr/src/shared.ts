// The host stream event of @dsh/client-hmr (browser-safe).

/** One browser half as the page loads it: `url` carries the version so a change is a new module. */
export interface HmrPlugin {
  package: string
  url: string
  version: string
}

/** Published on the host stream when browser halves changed on disk, appeared or went away. */
export interface ClientPluginsChanged {
  [key: string]: unknown
  type: 'client-plugins/changed'
  /** Halves to (re)load: changed files, or a row enabled since the last check. */
  load: HmrPlugin[]
  /** Packages whose half is no longer served (row disabled or removed). */
  unload: string[]
}

export const CLIENT_PLUGINS_CHANGED = 'client-plugins/changed'

/** The URL a changed half is imported from: the served path plus its version (a new module for the page). */
export function versionedUrl(plugin: HmrPlugin): string {
  return `${plugin.url}${plugin.url.includes('?') ? '&' : '?'}v=${encodeURIComponent(plugin.version)}`
}
