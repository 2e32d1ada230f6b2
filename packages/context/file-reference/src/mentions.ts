// Mentions in a human message: `@path` tokens at a word boundary, resolved inside the session's
// directory. Each becomes one logged context message with the file's content (or the reason it
// has none), so what the model saw is in the log.
import { type FileHandle, open, realpath, stat } from 'node:fs/promises'
import { isAbsolute, relative, resolve, sep } from 'node:path'
import { harnessReadRefusal, openedPath } from '@dsh/sandbox-policy'

/** The session's resolved sandbox policy (undefined: no policy owner loaded). */
export type SandboxPolicy = Parameters<typeof harnessReadRefusal>[1]

const TOKEN = /(^|\s)@([^\s]+)/g
const TRAILING = /[,.;:!?)\]}'"`]+$/

/** Candidate paths mentioned in `text`, in order, without duplicates (`@session:` is not a path). */
export function mentionedPaths(text: string): string[] {
  const out: string[] = []
  for (const m of text.matchAll(TOKEN)) {
    const raw = m[2]
    if (raw.startsWith('session:') || raw.includes('://')) continue
    if (!out.includes(raw)) out.push(raw)
  }
  return out
}

export interface ResolvedMention {
  /** As written (trailing punctuation removed when only that form exists). */
  mention: string
  /** Relative to the session directory (forward slashes). */
  path: string
  status: 'ok' | 'missing' | 'outside' | 'not-a-file' | 'binary' | 'unreadable'
  /** Something exists at the path (whatever the status says about using it). */
  found: boolean
  content?: string
  /** Bytes left out past maxBytes. */
  truncatedBytes?: number
  size?: number
}

const inside = (root: string, target: string) => {
  const rel = relative(root, target)
  return rel === '' || (!rel.startsWith('..' + sep) && rel !== '..' && !isAbsolute(rel))
}

/**
 * Reads one mention; never throws. What was really opened must lie in the session directory, and
 * under a confining `policy` must not be something the sandbox hides (sandbox-policy's
 * `harnessReadRefusal`): the check runs on the open descriptor, so a link swapped after the
 * path checks changes nothing.
 */
export async function resolveMention(
  cwd: string,
  mention: string,
  maxBytes: number,
  policy?: SandboxPolicy,
): Promise<ResolvedMention> {
  let candidate = mention
  let info = await stat(resolve(cwd, candidate)).catch(() => undefined)
  if (!info && TRAILING.test(mention)) {
    const trimmed = mention.replace(TRAILING, '')
    const other = trimmed ? await stat(resolve(cwd, trimmed)).catch(() => undefined) : undefined
    // Found without the punctuation, or found in neither form: the punctuation was prose.
    if (other || trimmed) candidate = trimmed
    info = other
  }
  const full = resolve(cwd, candidate)
  const path = relative(cwd, full).split(sep).join('/') || '.'
  const base = { mention: candidate, path, found: info !== undefined }
  const root = await realpath(cwd).catch(() => cwd)
  if (!inside(cwd, full)) return { ...base, status: 'outside' }
  if (!info) return { ...base, status: 'missing' }
  // A symlink inside that points outside counts as outside.
  const real = await realpath(full).catch(() => full)
  if (!inside(root, real)) return { ...base, status: 'outside' }
  if (!info.isFile()) return { ...base, status: 'not-a-file' }
  let handle: FileHandle | undefined
  try {
    handle = await open(full, 'r')
    const opened = openedPath(handle.fd)
    const refused = harnessReadRefusal(full, policy, { roots: [root], ...(opened !== undefined ? { opened } : {}) })
    if (refused !== undefined) return { ...base, status: 'unreadable', content: `not read: ${refused}` }
    const size = info.size
    const buffer = Buffer.alloc(Math.min(size, maxBytes))
    const { bytesRead } = await handle.read(buffer, 0, buffer.length, 0)
    const bytes = buffer.subarray(0, bytesRead)
    if (bytes.includes(0)) return { ...base, status: 'binary', size }
    return {
      ...base,
      status: 'ok',
      size,
      content: bytes.toString('utf8'),
      ...(size > bytesRead ? { truncatedBytes: size - bytesRead } : {}),
    }
  } catch (error) {
    return { ...base, status: 'unreadable', content: (error as NodeJS.ErrnoException).code ?? (error as Error).message }
  } finally {
    await handle?.close()
  }
}

/** The model-facing text of a resolved mention. */
export function renderMention(m: ResolvedMention): string {
  const attr = `path="${m.path.replace(/"/g, '&quot;')}"`
  switch (m.status) {
    case 'ok':
      return `<file ${attr}>\n${m.content}${m.content?.endsWith('\n') ? '' : '\n'}${m.truncatedBytes ? `[… ${m.truncatedBytes} more bytes not included; read the file for the rest]\n` : ''}</file>`
    case 'missing':
      return `<file ${attr} unavailable="missing">The user mentioned @${m.mention}, but no such file exists (it may have been deleted or renamed).</file>`
    case 'outside':
      return `<file ${attr} unavailable="outside">The user mentioned @${m.mention}, which is outside the session directory; its content was not included.</file>`
    case 'not-a-file':
      return `<file ${attr} unavailable="not-a-file">The user mentioned @${m.mention}, which is a directory or special file, not a regular file; no content was included.</file>`
    case 'binary':
      return `<file ${attr} unavailable="binary">The user mentioned @${m.mention}, a binary file (${m.size} bytes); its content was not included.</file>`
    case 'unreadable':
      return `<file ${attr} unavailable="unreadable">The user mentioned @${m.mention}, but it could not be read (${m.content}).</file>`
  }
}
