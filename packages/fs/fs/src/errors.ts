// The one error type every provider throws, with stable codes callers map to model-visible errors.

export const FS_ERROR_CODES = [
  'NOT_FOUND',
  'EXISTS',
  'IS_DIRECTORY',
  'NOT_A_DIRECTORY',
  'NOT_EMPTY',
  'PERMISSION',
  'DENIED',
  'ABORTED',
  'IO',
] as const
export type FsErrorCode = (typeof FS_ERROR_CODES)[number]

export class FsError extends Error {
  override name = 'FsError'
  /** One of FS_ERROR_CODES, or a policy code from a `fs/before-write` denial (e.g. `FILE_STALE`). */
  readonly code: FsErrorCode | (string & {})
  readonly path: string

  constructor(code: FsErrorCode | (string & {}), path: string, message: string, options?: { cause?: unknown }) {
    super(message, options)
    this.code = code
    this.path = path
  }
}

const ERRNO: Record<string, FsErrorCode> = {
  ENOENT: 'NOT_FOUND',
  EEXIST: 'EXISTS',
  EISDIR: 'IS_DIRECTORY',
  ENOTDIR: 'NOT_A_DIRECTORY',
  ENOTEMPTY: 'NOT_EMPTY',
  EACCES: 'PERMISSION',
  EPERM: 'PERMISSION',
  EROFS: 'PERMISSION',
}

const SENTENCE: Record<FsErrorCode, string> = {
  NOT_FOUND: 'does not exist',
  EXISTS: 'already exists',
  IS_DIRECTORY: 'is a directory',
  NOT_A_DIRECTORY: 'is not a directory (or a parent of it is a file)',
  NOT_EMPTY: 'is a directory that is not empty',
  PERMISSION: 'is not accessible (permission denied)',
  DENIED: 'was refused by a policy',
  ABORTED: 'operation was aborted',
  IO: 'could not be accessed',
}

/** Converts a Node errno error (or anything thrown) into an FsError about `path`. */
export function toFsError(error: unknown, path: string): FsError {
  if (error instanceof FsError) return error
  const errno = (error as { code?: unknown } | null)?.code
  const code: FsErrorCode = typeof errno === 'string' ? (ERRNO[errno] ?? 'IO') : 'IO'
  if ((error as { name?: unknown } | null)?.name === 'AbortError')
    return new FsError('ABORTED', path, `${path}: operation was aborted`, { cause: error })
  const detail = code === 'IO' && error instanceof Error ? ` (${error.message})` : ''
  return new FsError(code, path, `${path} ${SENTENCE[code]}${detail}`, { cause: error })
}
