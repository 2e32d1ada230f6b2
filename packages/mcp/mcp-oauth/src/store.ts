// Where OAuth sign-in state lives: per server and URL, a JSON record under a hashed credential
// name, in the credentials seam (the 0600 credentials file) when one is mounted, else in memory.
import { createHash } from 'node:crypto'
import type { OAuthDiscoveryState } from '@modelcontextprotocol/sdk/client/auth.js'
import type { OAuthClientInformationMixed, OAuthTokens } from '@modelcontextprotocol/sdk/shared/auth.js'

/** What is kept per server (and URL) between runs. */
export interface StoredAuth {
  url: string
  tokens?: OAuthTokens
  client?: OAuthClientInformationMixed
  discovery?: OAuthDiscoveryState
  /** The loopback port the registered redirect URI names. */
  port?: number
}

/** Where sign-in state lives: the credentials seam when there is one (0600 file), else memory. */
export interface AuthStore {
  load(key: string): Promise<StoredAuth | undefined>
  save(key: string, value: StoredAuth | undefined): Promise<void>
}

/** The credential name a server's sign-in state is stored under (server name and URL, hashed). */
export function storeKey(server: string, url: string): string {
  return `MCP_OAUTH_${createHash('sha256').update(`${server}\u0000${url}`).digest('hex').slice(0, 16).toUpperCase()}`
}

/** A store backed by a credentials service (`get`/`set`/`unset` of strings). */
export function credentialStore(credentials: {
  get(name: string): Promise<string | undefined>
  set(name: string, value: string): Promise<void>
  unset(name: string): Promise<void>
}): AuthStore {
  return {
    async load(key) {
      const text = await credentials.get(key)
      if (!text) return undefined
      try {
        const value = JSON.parse(text) as StoredAuth
        return value && typeof value === 'object' && typeof value.url === 'string' ? value : undefined
      } catch {
        return undefined
      }
    },
    async save(key, value) {
      if (value === undefined) await credentials.unset(key)
      else await credentials.set(key, JSON.stringify(value))
    },
  }
}

export function memoryStore(): AuthStore {
  const values = new Map<string, string>()
  return {
    async load(key) {
      const text = values.get(key)
      return text ? (JSON.parse(text) as StoredAuth) : undefined
    },
    async save(key, value) {
      if (value === undefined) values.delete(key)
      else values.set(key, JSON.stringify(value))
    },
  }
}

/**
 * The credentials seam (the 0600 credentials file) while `credentials()` gives one, else this
 * process's memory; a save the credentials refuse is kept in memory for the run (`warn` says so).
 */
export function layeredStore(
  credentials: () => Parameters<typeof credentialStore>[0] | undefined,
  warn: (message: string) => void,
): AuthStore {
  const memory = memoryStore()
  return {
    load: (key) => {
      const seam = credentials()
      return (seam ? credentialStore(seam) : memory).load(key)
    },
    save: async (key, value) => {
      const seam = credentials()
      if (!seam) return memory.save(key, value)
      try {
        await credentialStore(seam).save(key, value)
      } catch (error) {
        warn(`could not store an MCP sign-in (${(error as Error).message}); it lasts for this run only`)
        await memory.save(key, value)
      }
    },
  }
}
