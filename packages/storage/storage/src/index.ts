// @dsh/storage: the `ctx.storage` seam for non-session data (workspaces, UI preferences): typed
// key-value domains validated by schemastery schemas, with change events. Providers own the medium.
export {
  StorageService,
  StorageError,
  DOMAIN_NAME,
  MAX_KEY_LENGTH,
  type Domain,
  type DomainChange,
  type DomainListener,
  type DomainSchema,
  type DomainWrite,
  type LoadedDomain,
  type StorageErrorCode,
} from './service.ts'
export { MemoryStorage } from './memory.ts'
import { MemoryStorage } from './memory.ts'

export const name = 'storage'
/** The in-memory provider; real deployments mount `@dsh/storage-json` or `@dsh/storage-sqlite`. */
export default MemoryStorage
