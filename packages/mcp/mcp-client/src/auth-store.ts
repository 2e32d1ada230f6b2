// Where OAuth sign-in state lives for the service: the credentials seam when mounted, else memory.
import { type AuthStore, credentialStore, memoryStore } from './oauth.ts'

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
