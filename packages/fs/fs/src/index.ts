// @dsh/fs: the `ctx.fs` provider contract (Service Definition, no I/O of its own) and the `fs/*` events.
export { FileSystem, sha256, type CommitOptions } from './filesystem.ts'
export { FsError, toFsError, FS_ERROR_CODES, type FsErrorCode } from './errors.ts'
export { PathLock } from './lock.ts'
export * from './types.ts'
import { FileSystem } from './filesystem.ts'

export const name = 'fs'
export default FileSystem
