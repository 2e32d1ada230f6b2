// The workspace's trip into the sandbox: the local working tree, minus what `.gitignore` files
// exclude, `.git` itself and credential files, packed as one gzipped tar in memory (after a size
// check over the files' own sizes, so an oversized tree is refused before anything is read).
import { lstatSync, readdirSync, readFileSync, type Stats } from 'node:fs'
import { join, relative, sep } from 'node:path'
import ignore, { type Ignore } from 'ignore'
import { create } from 'tar'

export interface UploadPlan {
  /** Paths relative to the root, `/`-separated, directories not listed. */
  files: string[]
  /** Sum of the files' sizes in bytes. */
  bytes: number
}

/** Never uploaded, whatever `.gitignore` says: the repository database and credential files. */
export const ALWAYS_EXCLUDED = [
  '.git',
  '.env',
  '.env.*',
  '.credentials.yaml',
  '.dsh-credentials*',
  '*.pem',
  'id_rsa*',
  'id_ed25519*',
]

export class UploadTooLarge extends Error {
  constructor(
    readonly bytes: number,
    readonly limit: number,
  ) {
    super(
      `the workspace is ${mib(bytes)} after .gitignore, over the upload cap of ${mib(limit)}; raise e2b.upload.maxBytes or ignore more files`,
    )
  }
}

function mib(bytes: number): string {
  return `${(bytes / (1 << 20)).toFixed(1)} MiB`
}

/**
 * Lists what would be uploaded from `root`: every regular file and symlink not excluded by a
 * `.gitignore` on its path (nested ones apply below their directory) or by `exclude`. Throws
 * `UploadTooLarge` as soon as the running total passes `maxBytes`.
 */
export function planUpload(
  root: string,
  options: { maxBytes: number; exclude: readonly string[]; signal?: AbortSignal },
): UploadPlan {
  const files: string[] = []
  let bytes = 0
  const base = ignore().add([...ALWAYS_EXCLUDED, ...options.exclude])
  const walk = (dir: string, rules: Array<{ at: string; ig: Ignore }>) => {
    options.signal?.throwIfAborted()
    let names: string[]
    try {
      names = readdirSync(dir).sort()
    } catch {
      return
    }
    let own: Ignore | undefined
    if (names.includes('.gitignore')) {
      try {
        own = ignore().add(readFileSync(join(dir, '.gitignore'), 'utf8'))
      } catch {
        // unreadable: no rules from it
      }
    }
    const here = own ? [...rules, { at: dir, ig: own }] : rules
    for (const name of names) {
      const path = join(dir, name)
      let stat: Stats
      try {
        stat = lstatSync(path)
      } catch {
        continue
      }
      const isDir = stat.isDirectory()
      const rel = relative(root, path).split(sep).join('/')
      const probe = isDir ? `${rel}/` : rel
      if (base.ignores(probe)) continue
      if (here.some(({ at, ig }) => ig.ignores(`${relative(at, path).split(sep).join('/')}${isDir ? '/' : ''}`)))
        continue
      if (isDir) walk(path, here)
      else if (stat.isFile() || stat.isSymbolicLink()) {
        bytes += stat.isFile() ? stat.size : 0
        if (bytes > options.maxBytes) throw new UploadTooLarge(bytes, options.maxBytes)
        files.push(rel)
      }
    }
  }
  walk(root, [])
  return { files, bytes }
}

/** The planned files as one gzipped tar (paths relative to `root`, modes and symlinks kept), in memory. */
export async function packUpload(root: string, plan: UploadPlan, signal?: AbortSignal): Promise<Uint8Array> {
  const chunks: Buffer[] = []
  const stream = create({ cwd: root, gzip: true, portable: true, noDirRecurse: true }, plan.files)
  for await (const chunk of stream as AsyncIterable<Buffer>) {
    // Stopped while packing (Ctrl-C): the archive is only in memory, so nothing is left behind.
    signal?.throwIfAborted()
    chunks.push(chunk)
  }
  signal?.throwIfAborted()
  return new Uint8Array(Buffer.concat(chunks))
}
