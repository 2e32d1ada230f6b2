// Finding and reading instruction files on the local filesystem, with size caps. Every failure is
// reported as a value (`problem`) so the caller decides whether to warn; nothing here throws for
// a file's state.
import type { Stats } from 'node:fs'
import { open, realpath, stat } from 'node:fs/promises'
import { dirname, isAbsolute, join, relative, resolve, sep } from 'node:path'
import { openedPath } from '@dsh/sandbox-policy'

/**
 * Why a found instruction file must not be read for the model (see sandbox-policy's
 * `harnessReadRefusal`), given its path and what was really opened; undefined when it may.
 */
export type ReadCheck = (path: string, opened: string | undefined) => string | undefined

export type Found =
  | { kind: 'file'; path: string; real: string; text: string; size: number; shownBytes: number }
  | { kind: 'none' }
  | { kind: 'problem'; path: string; reason: string }

const describe = (error: unknown): string => {
  const code = (error as { code?: unknown } | null)?.code
  if (code === 'EACCES' || code === 'EPERM') return 'permission denied'
  if (code === 'ELOOP') return 'symlink loop'
  return error instanceof Error ? error.message : String(error)
}

/** Bytes of `bytes` up to `limit`, not cutting a UTF-8 sequence in half. */
function utf8Prefix(bytes: Buffer, limit: number): Buffer {
  if (bytes.byteLength <= limit) return bytes
  let end = limit
  while (end > 0 && (bytes[end] & 0xc0) === 0x80) end--
  return bytes.subarray(0, end)
}

/**
 * The instruction file of `dir`: the first of `names` that exists as a regular file (symlinks
 * followed). Reads at most `maxBytes` of it, unless `check` refuses it (a `problem`). A name that exists but cannot be used (unreadable,
 * a symlink loop, not a regular file) is a `problem`, and the next name is not tried: falling back
 * past a broken primary file would hide it.
 */
export async function findInstructionFile(
  dir: string,
  names: readonly string[],
  maxBytes: number,
  check?: ReadCheck,
): Promise<Found> {
  for (const name of names) {
    const path = join(dir, name)
    let info: Stats
    try {
      info = await stat(path)
    } catch (error) {
      const code = (error as { code?: unknown } | null)?.code
      if (code === 'ENOENT' || code === 'ENOTDIR') continue
      return { kind: 'problem', path, reason: describe(error) }
    }
    if (info.isDirectory()) continue
    if (!info.isFile()) return { kind: 'problem', path, reason: 'not a regular file' }
    try {
      const real = await realpath(path)
      const handle = await open(path, 'r')
      try {
        // Checked on what was opened (a link swapped after realpath changes nothing), before a byte is read.
        const refused = check?.(path, openedPath(handle.fd))
        if (refused !== undefined) return { kind: 'problem', path, reason: `not read: ${refused}` }
        const buffer = Buffer.alloc(Math.min(info.size, maxBytes) + 4)
        const { bytesRead } = await handle.read(buffer, 0, buffer.byteLength, 0)
        const size = Math.max(info.size, bytesRead)
        const shown = utf8Prefix(buffer.subarray(0, bytesRead), maxBytes)
        return { kind: 'file', path, real, text: shown.toString('utf8'), size, shownBytes: shown.byteLength }
      } finally {
        await handle.close()
      }
    } catch (error) {
      return { kind: 'problem', path, reason: describe(error) }
    }
  }
  return { kind: 'none' }
}

/** The nearest ancestor of `cwd` (inclusive) holding one of `markers`; `cwd` itself when none does. */
export async function projectRoot(cwd: string, markers: readonly string[]): Promise<string> {
  const start = resolve(cwd)
  for (let dir = start; ; dir = dirname(dir)) {
    for (const marker of markers) {
      try {
        await stat(join(dir, marker))
        return dir
      } catch {
        // not here
      }
    }
    if (dirname(dir) === dir) return start
  }
}

/** Directories from `root` down to `leaf`, both inclusive; empty when `leaf` is not inside `root`. */
export function chain(root: string, leaf: string): string[] {
  const rel = relative(root, leaf)
  if (rel === '..' || rel.startsWith(`..${sep}`) || isAbsolute(rel)) return []
  const dirs = [root]
  if (rel === '') return dirs
  let dir = root
  for (const part of rel.split(sep)) dirs.push((dir = join(dir, part)))
  return dirs
}

/** The directory a tool touched through `path`: the path itself when it is a directory, else its parent. */
export async function touchedDir(path: string): Promise<string> {
  try {
    if ((await stat(path)).isDirectory()) return path
  } catch {
    // removed or never existed: its parent is what was touched
  }
  return dirname(path)
}

export async function realOrUndefined(path: string): Promise<string | undefined> {
  try {
    return await realpath(path)
  } catch {
    return undefined
  }
}
