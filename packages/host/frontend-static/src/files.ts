// Serving files from one directory: content types, cache headers, ETags, compression with a
// byte-bounded cache of the compressed bodies, and the containment check that keeps every
// answered file inside the directory (symlinks included).
import type { IncomingMessage, ServerResponse } from 'node:http'
import { createReadStream } from 'node:fs'
import { readFile, realpath, stat } from 'node:fs/promises'
import { extname, resolve, sep } from 'node:path'
import { brotliCompress, brotliCompressSync, constants as zlib, gzip, gzipSync } from 'node:zlib'
import { promisify } from 'node:util'

const brotli = promisify(brotliCompress)
const gzipAsync = promisify(gzip)

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json; charset=utf-8',
  '.map': 'application/json; charset=utf-8',
  '.webmanifest': 'application/manifest+json; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.txt': 'text/plain; charset=utf-8',
  '.xml': 'application/xml; charset=utf-8',
  '.wasm': 'application/wasm',
  '.png': 'image/png',
  '.jpg': 'image/jpeg',
  '.jpeg': 'image/jpeg',
  '.gif': 'image/gif',
  '.webp': 'image/webp',
  '.avif': 'image/avif',
  '.ico': 'image/x-icon',
  '.woff': 'font/woff',
  '.woff2': 'font/woff2',
  '.ttf': 'font/ttf',
  '.otf': 'font/otf',
}

/** Content type by extension; anything unknown is `application/octet-stream`. */
export function contentTypeOf(path: string): string {
  return TYPES[extname(path).toLowerCase()] ?? 'application/octet-stream'
}

const COMPRESSIBLE = /^(text\/|application\/(json|javascript|xml|manifest\+json|wasm)|image\/svg\+xml)/

/** Smaller bodies are sent as they are: the headers would eat most of the gain. */
export const MIN_COMPRESS_BYTES = 1024

/**
 * A content-hashed file name: a `.` or `-` separated part of at least 8 letters/digits holding
 * at least one digit and one letter, right before the extension (`index-B7x9k2Qa.js`,
 * `app.3f9a1c0d.css`). Such a file never changes under its name, so it may be cached forever.
 */
export function isHashedName(path: string): boolean {
  const base = path.slice(path.lastIndexOf('/') + 1)
  const match = /[.-]([A-Za-z0-9_]{8,})\.[A-Za-z0-9]+$/.exec(base)
  if (!match) return false
  return /[0-9]/.test(match[1]) && /[A-Za-z]/.test(match[1])
}

export type Encoding = 'br' | 'gzip' | 'identity'

/** The best encoding the client accepts: br, then gzip; `q=0` refuses one. */
export function pickEncoding(header: string | string[] | undefined): Encoding {
  const text = Array.isArray(header) ? header.join(',') : (header ?? '')
  const accepted = new Map<string, number>()
  for (const part of text.split(',')) {
    const [token, ...params] = part.trim().toLowerCase().split(';')
    if (!token) continue
    let q = 1
    for (const p of params) {
      const m = /^\s*q=([0-9.]+)\s*$/.exec(p)
      if (m) q = Number(m[1])
    }
    accepted.set(token, Number.isFinite(q) ? q : 0)
  }
  const ok = (name: string) => (accepted.get(name) ?? accepted.get('*') ?? 0) > 0
  if (ok('br')) return 'br'
  if (ok('gzip')) return 'gzip'
  return 'identity'
}

/** Bodies up to this size are compressed synchronously. */
export const SYNC_COMPRESS_BYTES = 16 * 1024

/** Compressed bodies keyed by file identity and encoding, evicted oldest-first past a byte budget. */
export class CompressionCache {
  private readonly entries = new Map<string, Buffer>()
  private bytes = 0
  hits = 0
  misses = 0

  constructor(readonly maxBytes = 32 * 1024 * 1024) {}

  async get(key: string, encoding: 'br' | 'gzip', body: () => Promise<Buffer>): Promise<Buffer> {
    const full = `${encoding}\0${key}`
    const cached = this.entries.get(full)
    if (cached) {
      this.hits++
      // Re-insert: the Map's order is the eviction order.
      this.entries.delete(full)
      this.entries.set(full, cached)
      return cached
    }
    this.misses++
    const raw = await body()
    const brOptions = { params: { [zlib.BROTLI_PARAM_QUALITY]: 9, [zlib.BROTLI_PARAM_SIZE_HINT]: raw.length } }
    // A small body (index.html) is compressed in place: well under a millisecond, while a trip
    // through the thread pool waits behind whatever else it holds (module loading at start-up).
    const out =
      raw.length <= SYNC_COMPRESS_BYTES
        ? encoding === 'br'
          ? brotliCompressSync(raw, brOptions)
          : gzipSync(raw, { level: 9 })
        : encoding === 'br'
          ? await brotli(raw, brOptions)
          : await gzipAsync(raw, { level: 9 })
    if (out.length <= this.maxBytes) {
      this.entries.set(full, out)
      this.bytes += out.length
      for (const [k, v] of this.entries) {
        if (this.bytes <= this.maxBytes) break
        this.entries.delete(k)
        this.bytes -= v.length
      }
    }
    return out
  }

  clear(): void {
    this.entries.clear()
    this.bytes = 0
  }
}

export type Resolved =
  | { kind: 'file'; path: string; size: number; mtimeMs: number }
  | { kind: 'missing' }
  | { kind: 'outside' }

/**
 * Maps a URL pathname to a file under `root` (an absolute, real path). A pathname that cannot be
 * decoded, holds a NUL, or whose `..` segments or symlinks lead outside `root` is `outside`; a
 * directory or a path that does not exist is `missing`.
 */
export async function resolveUnder(root: string, pathname: string): Promise<Resolved> {
  let decoded: string
  try {
    decoded = decodeURIComponent(pathname)
  } catch {
    return { kind: 'outside' }
  }
  if (decoded.includes('\0') || decoded.includes('\\')) return { kind: 'outside' }
  const target = resolve(root, '.' + (decoded.startsWith('/') ? decoded : '/' + decoded))
  if (target !== root && !target.startsWith(root + sep)) return { kind: 'outside' }
  let real: string
  try {
    real = await realpath(target)
  } catch {
    return { kind: 'missing' }
  }
  if (real !== root && !real.startsWith(root + sep)) return { kind: 'outside' }
  const info = await stat(real).catch(() => undefined)
  if (!info?.isFile()) return { kind: 'missing' }
  return { kind: 'file', path: real, size: info.size, mtimeMs: info.mtimeMs }
}

export interface SendOptions {
  cacheControl: string
  /** Replaces the file's bytes (index.html after its transforms); the ETag then hashes nothing new, so none is sent. */
  body?: Buffer
  cache: CompressionCache
  compress: boolean
}

/** Answers a GET/HEAD with one file: type, caching, ETag/304, negotiated compression. */
export async function sendFile(
  req: IncomingMessage,
  res: ServerResponse,
  file: { path: string; size: number; mtimeMs: number },
  options: SendOptions,
): Promise<void> {
  const type = contentTypeOf(file.path)
  res.setHeader('content-type', type)
  res.setHeader('cache-control', options.cacheControl)
  res.setHeader('x-content-type-options', 'nosniff')
  const etag = options.body ? undefined : `W/"${file.size.toString(16)}-${Math.floor(file.mtimeMs).toString(16)}"`
  if (etag) {
    res.setHeader('etag', etag)
    const match = req.headers['if-none-match']
    if (match?.split(',').some((t) => t.trim() === etag)) {
      res.statusCode = 304
      res.end()
      return
    }
  }
  const size = options.body ? options.body.length : file.size
  const compressible = options.compress && COMPRESSIBLE.test(type) && size >= MIN_COMPRESS_BYTES
  if (compressible) res.setHeader('vary', 'accept-encoding')
  const encoding = compressible ? pickEncoding(req.headers['accept-encoding']) : 'identity'
  const head = req.method === 'HEAD'
  if (encoding !== 'identity') {
    const key = options.body
      ? `body:${file.path}:${hashOf(options.body)}`
      : `${file.path}\0${file.mtimeMs}\0${file.size}`
    const body = await options.cache.get(key, encoding, async () => options.body ?? (await readFile(file.path)))
    res.setHeader('content-encoding', encoding)
    res.setHeader('content-length', body.length)
    res.statusCode = 200
    res.end(head ? undefined : body)
    return
  }
  res.setHeader('content-length', size)
  res.statusCode = 200
  if (head) {
    res.end()
    return
  }
  if (options.body) {
    res.end(options.body)
    return
  }
  await new Promise<void>((done, fail) => {
    const stream = createReadStream(file.path)
    stream.once('error', (error) => {
      if (!res.headersSent) fail(error)
      else {
        res.destroy(error)
        done()
      }
    })
    res.once('close', () => {
      stream.destroy()
      done()
    })
    stream.pipe(res)
  })
}

/** A cheap content fingerprint for transformed bodies (FNV-1a, 32 bit). */
function hashOf(body: Buffer): string {
  let h = 0x811c9dc5
  for (let i = 0; i < body.length; i++) {
    h ^= body[i]
    h = Math.imul(h, 0x01000193)
  }
  return (h >>> 0).toString(16) + ':' + body.length
}
