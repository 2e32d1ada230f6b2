// The boot manifest: what the host tells the page before any script runs (inlined in index.html
// as `<script type="application/json" id="dsh-boot">`), or, when the page was served by a dev
// server, fetched from `/client-manifest.json`.
import type { ClientPluginEntry } from './plugins.ts'

export interface BootManifest {
  version: 1
  /** Browser halves of the enabled rows, in row order. */
  plugins: ClientPluginEntry[]
  /** The directory `dsh web` was started in (first run opens a session there). */
  launchCwd?: string
}

export const MANIFEST_ELEMENT_ID = 'dsh-boot'
export const MANIFEST_PATH = '/client-manifest.json'

export function parseManifest(value: unknown): BootManifest {
  const v = value as Partial<BootManifest> | null
  if (!v || typeof v !== 'object' || v.version !== 1 || !Array.isArray(v.plugins))
    throw new TypeError('boot manifest: expected {version: 1, plugins: [...]}')
  const plugins = v.plugins.filter(
    (p): p is ClientPluginEntry => !!p && typeof p.package === 'string' && typeof p.url === 'string',
  )
  return { version: 1, plugins, ...(typeof v.launchCwd === 'string' ? { launchCwd: v.launchCwd } : {}) }
}

/** The inlined manifest, else the host's `/client-manifest.json`. */
export async function readManifest(base = ''): Promise<BootManifest> {
  const element = globalThis.document?.getElementById(MANIFEST_ELEMENT_ID)
  if (element?.textContent?.trim()) {
    try {
      return parseManifest(JSON.parse(element.textContent))
    } catch (error) {
      console.warn(`[dsh] ${(error as Error).message}; asking the host`)
    }
  }
  const response = await fetch(base + MANIFEST_PATH, { credentials: 'same-origin', cache: 'no-store' })
  if (!response.ok) throw new Error(`boot manifest: the host answered ${response.status}`)
  return parseManifest(await response.json())
}
