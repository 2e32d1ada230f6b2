// The consent store: which project directories the user trusted, per source and per content hash.
// One JSON file under $DSH_HOME (mode 0600, replaced atomically under a writer lock). A file that
// cannot be read as a store is reported as damaged and counts as "nothing trusted"; it is never
// rewritten, so a damaged file is fixed or removed by the user, not silently lost.
import { createHash } from 'node:crypto'
import { mkdirSync, readFileSync, realpathSync, statSync } from 'node:fs'
import { dirname, isAbsolute, join, relative, resolve, sep } from 'node:path'
import { withFileLock, writeAtomic } from '@dsh/atomic-write'
import type { JsonValue } from '@dsh/brand'

/** The store's file name under $DSH_HOME. */
export const STORE_FILE = 'trusted-projects.json'

export type { JsonValue }

/** One thing a project ships that would run (a server, a hook command). */
export interface TrustItem {
  /** The file that declares it, relative to the project directory (e.g. `.mcp.json`). */
  file: string
  /** What it is: `mcp-server`, `hook`, ... */
  kind: string
  /** Its name within the file: a server name, `PreToolUse[Bash]`, ... */
  name: string
  /** One line for a human: the command with its arguments, or the URL. */
  display: string
  /** Exactly what is hashed: the entry as the file declares it (command, args, env, url, ...). */
  run: JsonValue
}

/** What a gated source would run from one project directory. */
export interface TrustRequest {
  /** The source's stable id, e.g. `mcp`, `hooks-claude-code`; consent is recorded per source. */
  source: string
  /** A human label: "MCP servers", "Claude Code hooks". */
  label: string
  dir: string
  items: TrustItem[]
}

export interface Evaluation extends TrustRequest {
  /** The real path of the project directory (symlinks resolved). */
  dir: string
  /** SHA-256 (hex) of the source id and its items, canonically encoded. */
  hash: string
  trusted: boolean
}

export interface SourceConsent {
  hash: string
  /** ISO time of the consent. */
  trustedAt: string
  /** What was trusted, as shown then (for `dsh trust --list`). */
  items: Array<Pick<TrustItem, 'file' | 'kind' | 'name' | 'display'>>
}

export interface ProjectEntry {
  dir: string
  sources: Record<string, SourceConsent>
}

interface StoreFile {
  version: 1
  projects: Record<string, { sources: Record<string, SourceConsent> }>
}

export class TrustStoreError extends Error {
  readonly code = 'TRUST_STORE'
}

const isRecord = (value: unknown): value is Record<string, unknown> =>
  value !== null && typeof value === 'object' && !Array.isArray(value)

/** JSON with object keys sorted at every level, so equal content always hashes equally. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`
  if (isRecord(value)) {
    return `{${Object.keys(value)
      .filter((key) => value[key] !== undefined)
      .sort()
      .map((key) => `${JSON.stringify(key)}:${canonicalJson(value[key])}`)
      .join(',')}}`
  }
  return JSON.stringify(value ?? null)
}

/** Items in a stable order (file, kind, name, then content). */
export function sortItems(items: readonly TrustItem[]): TrustItem[] {
  const key = (item: TrustItem) => `${item.file}\u0000${item.kind}\u0000${item.name}\u0000${canonicalJson(item.run)}`
  return [...items].sort((a, b) => (key(a) < key(b) ? -1 : key(a) > key(b) ? 1 : 0))
}

/** The content hash of what `source` would run: the display lines are not part of it. */
export function hashItems(source: string, items: readonly TrustItem[]): string {
  const body = canonicalJson({
    source,
    items: sortItems(items).map(({ file, kind, name, run }) => ({ file, kind, name, run })),
  })
  return createHash('sha256').update(body).digest('hex')
}

/** Files larger than this are named by size and mtime instead of read for their digest. */
const MAX_DIGEST_BYTES = 16 * 1024 * 1024

/**
 * Digests of the project's own files that `words` (a command and its arguments, as written)
 * name: a trusted `.mcp.json` entry `sh ./tools/server.sh` must not keep running after a confined
 * command rewrote `tools/server.sh`. Each word that is not an option and resolves (against `base`,
 * default `dir`) to a regular file inside the real project directory contributes
 * `{<path relative to dir>: sha256}`. Files outside the project are the user's and not hashed.
 */
export function projectFileDigests(dir: string, words: readonly string[], base: string = dir): Record<string, string> {
  let root: string
  try {
    root = realpathSync(dir)
  } catch {
    return {}
  }
  const out: Record<string, string> = {}
  for (const raw of words) {
    const word = raw.replace(/['"]/g, '')
    if (word === '' || word.startsWith('-') || word.includes('\0')) continue
    let real: string
    try {
      real = realpathSync(isAbsolute(word) ? word : resolve(base, word))
    } catch {
      continue
    }
    const rel = relative(root, real)
    if (rel === '' || rel.startsWith('..') || isAbsolute(rel) || rel.split(sep)[0] === '..') continue
    try {
      const info = statSync(real)
      if (!info.isFile()) continue
      out[rel] =
        info.size > MAX_DIGEST_BYTES
          ? `size ${info.size} mtime ${info.mtimeMs}`
          : createHash('sha256').update(readFileSync(real)).digest('hex')
    } catch {
      // unreadable: nothing to pin
    }
  }
  return out
}

/** Programs whose first non-option argument is the script they run. */
const INTERPRETERS = new Set([
  'sh',
  'bash',
  'zsh',
  'dash',
  'ksh',
  'fish',
  'node',
  'nodejs',
  'python',
  'python3',
  'ruby',
  'perl',
  'php',
  'deno',
  'bun',
  'tsx',
  'ts-node',
  'lua',
  'Rscript',
  'pwsh',
])

/**
 * The words of one simple command that name code it executes: the program itself, and for an
 * interpreter (`sh`, `node`, `python3`, ...) its script, the first argument that is not an option
 * (`run` of `deno run` / `bun run` skipped). Data files a program is given (`--db app.sqlite`) are
 * not code and are left out, so a server that writes its own database does not lose its consent.
 * `sh -c 'text'` runs text, not a file: nothing is added for it.
 */
export function commandTargets(words: readonly string[]): string[] {
  const list = words.map((word) => word.replace(/['"]/g, '')).filter((word) => word !== '')
  while (list.length && /^[A-Za-z_][A-Za-z0-9_]*=/.test(list[0]!)) list.shift()
  const program = list[0]
  if (program === undefined) return []
  const base = program
    .split('/')
    .pop()!
    .replace(/\d+(\.\d+)*$/, '')
  if (!INTERPRETERS.has(base) && !INTERPRETERS.has(program.split('/').pop()!)) return [program]
  const rest = list.slice(1)
  if (rest.includes('-c') || rest.includes('-e') || rest.includes('--eval')) return [program]
  const script = rest.find((word, i) => !word.startsWith('-') && !(i === 0 && word === 'run'))
  return script === undefined ? [program] : [program, script]
}

/** The executed files of a shell command line: each simple command's `commandTargets` (output redirections dropped). */
export function shellCommandTargets(command: string): string[] {
  return command
    .replace(/\d*>>?&?\s*\S+/g, ' ')
    .split(/\s*(?:&&|\|\||[;|&()\n])\s*/)
    .flatMap((simple) => commandTargets(simple.trim().split(/\s+/)))
}

/** The real path of a project directory; a clear error when it does not exist or is not a directory. */
export function projectDir(dir: string): string {
  let real: string
  try {
    real = realpathSync(dir)
  } catch (error) {
    throw new TrustStoreError(`${dir}: no such directory (${(error as NodeJS.ErrnoException).code ?? String(error)})`)
  }
  if (!statSync(real).isDirectory()) throw new TrustStoreError(`${dir}: not a directory`)
  return real
}

function checkConsent(value: unknown, where: string): SourceConsent {
  if (!isRecord(value)) throw new Error(`${where} is not an object`)
  if (typeof value.hash !== 'string' || !/^[0-9a-f]{64}$/.test(value.hash))
    throw new Error(`${where}.hash is not a SHA-256 hex digest`)
  if (typeof value.trustedAt !== 'string') throw new Error(`${where}.trustedAt is not a string`)
  const items = Array.isArray(value.items)
    ? value.items.filter(isRecord).map((item) => ({
        file: String(item.file ?? ''),
        kind: String(item.kind ?? ''),
        name: String(item.name ?? ''),
        display: String(item.display ?? ''),
      }))
    : []
  return { hash: value.hash, trustedAt: value.trustedAt, items }
}

/** Parses the store text; throws an Error whose message says what is wrong (never the content). */
export function parseStore(text: string): StoreFile {
  let parsed: unknown
  try {
    parsed = JSON.parse(text)
  } catch (error) {
    throw new Error(`not valid JSON (${(error as Error).message})`)
  }
  if (!isRecord(parsed)) throw new Error('expected a JSON object')
  if (parsed.version !== 1) throw new Error(`unknown version ${JSON.stringify(parsed.version)} (expected 1)`)
  if (!isRecord(parsed.projects)) throw new Error('"projects" is not an object')
  const projects: StoreFile['projects'] = {}
  for (const [dir, entry] of Object.entries(parsed.projects)) {
    if (!isRecord(entry) || !isRecord(entry.sources))
      throw new Error(`projects[${JSON.stringify(dir)}].sources is not an object`)
    const sources: Record<string, SourceConsent> = {}
    for (const [source, consent] of Object.entries(entry.sources))
      sources[source] = checkConsent(consent, `projects[${JSON.stringify(dir)}].sources.${source}`)
    projects[dir] = { sources }
  }
  return { version: 1, projects }
}

export type StoreRead = { ok: true; file: StoreFile } | { ok: false; problem: string }

/**
 * The store file. Reads are synchronous (a small file, read when a gated source has something to
 * gate); writes take the writer lock, re-read, and replace the file atomically with mode 0600.
 */
export class TrustStore {
  constructor(readonly path: string) {}

  static inHome(home: string): TrustStore {
    return new TrustStore(join(home, STORE_FILE))
  }

  /** The store as on disk. Missing: empty. Damaged or unsafe: `{ok: false, problem}` naming the file. */
  read(): StoreRead {
    let text: string
    try {
      text = readFileSync(this.path, 'utf8')
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code
      if (code === 'ENOENT') return { ok: true, file: { version: 1, projects: {} } }
      return { ok: false, problem: `${this.path}: cannot read (${code ?? String(error)})` }
    }
    // Consent another user could have written is no consent.
    const info = statSync(this.path)
    if (typeof process.getuid === 'function' && info.uid !== process.getuid())
      return { ok: false, problem: `${this.path}: owned by another user (uid ${info.uid})` }
    if ((info.mode & 0o022) !== 0)
      return {
        ok: false,
        problem: `${this.path}: writable by other users (mode ${(info.mode & 0o777).toString(8)}); fix it with chmod 600`,
      }
    try {
      return { ok: true, file: parseStore(text) }
    } catch (error) {
      return { ok: false, problem: `${this.path}: damaged: ${(error as Error).message}` }
    }
  }

  /** Whether `hash` is the consented content of `source` in the (real) directory `dir`; false for a damaged store. */
  isTrusted(dir: string, source: string, hash: string): boolean {
    const read = this.read()
    return read.ok && read.file.projects[dir]?.sources[source]?.hash === hash
  }

  list(): ProjectEntry[] {
    const read = this.read()
    if (!read.ok) throw new TrustStoreError(read.problem)
    return Object.entries(read.file.projects)
      .map(([dir, entry]) => ({ dir, sources: entry.sources }))
      .sort((a, b) => a.dir.localeCompare(b.dir))
  }

  /** Records consent to `evaluation` (its directory, source and hash), replacing the source's previous consent. */
  async trust(evaluation: Pick<Evaluation, 'dir' | 'source' | 'hash' | 'items'>, now = new Date()): Promise<void> {
    await this.update((file) => {
      const entry = (file.projects[evaluation.dir] ??= { sources: {} })
      entry.sources[evaluation.source] = {
        hash: evaluation.hash,
        trustedAt: now.toISOString(),
        items: sortItems(evaluation.items).map(({ file, kind, name, display }) => ({ file, kind, name, display })),
      }
      return true
    })
  }

  /** Forgets every consent of the (real) directory `dir`. Resolves whether there was any. */
  async revoke(dir: string): Promise<boolean> {
    let had = false
    await this.update((file) => {
      had = Object.hasOwn(file.projects, dir)
      if (had) delete file.projects[dir]
      return had
    })
    return had
  }

  private async update(change: (file: StoreFile) => boolean): Promise<void> {
    mkdirSync(dirname(this.path), { recursive: true, mode: 0o700 })
    await withFileLock(this.path, { timeoutMs: 10_000, staleMs: 30_000 }, async () => {
      const read = this.read()
      if (!read.ok)
        throw new TrustStoreError(`${read.problem}; nothing was changed (fix the file or move it away, then try again)`)
      if (!change(read.file)) return
      await writeAtomic(this.path, JSON.stringify(read.file, null, 2) + '\n', 0o600)
    })
  }
}

/** Evaluates `requests` against the store as it is now (a damaged store throws TrustStoreError). */
export function evaluateAll(store: TrustStore, requests: readonly TrustRequest[]): Evaluation[] {
  const read = store.read()
  if (!read.ok)
    throw new TrustStoreError(`${read.problem}; nothing was changed (fix the file or move it away, then try again)`)
  return requests.map((request) => {
    const dir = projectDir(request.dir)
    const items = sortItems(request.items)
    const hash = hashItems(request.source, items)
    return { ...request, dir, items, hash, trusted: read.file.projects[dir]?.sources[request.source]?.hash === hash }
  })
}

/** Trusts every request that has items, as it is now (what `dsh trust DIR` records). */
export async function trustAll(store: TrustStore, requests: readonly TrustRequest[]): Promise<Evaluation[]> {
  const evaluations = evaluateAll(
    store,
    requests.filter((request) => request.items.length > 0),
  )
  for (const evaluation of evaluations) if (!evaluation.trusted) await store.trust(evaluation)
  return evaluations
}
