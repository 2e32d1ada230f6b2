// @dsh/attachment-local: `ctx.attachments` on the local disk. Objects live at
// `<DSH_HOME>/attachments/v1/objects/<first 2 hex>/<sha256 hex>`, addressed `sha256:<hex>`.
// Publishing is crash-safe: the home's directory chain is synced once per process, then each
// object is written to a private staging file (0600), synced, hard-linked into place (exclusive:
// an existing object is never replaced) and the directories on the path are synced, so a
// reported reference survives a crash. Reads re-check the digest and the image header. With
// `ctx.webServer` mounted it serves `POST /attachments` (JSON `{name?, data: <base64>}`) and
// `GET /attachments/<id>`.
import { createHash, randomBytes } from 'node:crypto'
import { link, mkdir, open, readFile, stat, unlink } from 'node:fs/promises'
import type { IncomingMessage, ServerResponse } from 'node:http'
import { dirname, join, parse } from 'node:path'
import { type Context, Service } from 'cordis'
import Schema from 'schemastery'
import {
  AttachmentError,
  admit,
  attachmentToken,
  isAttachmentId,
  sniffImage,
  type AttachmentRef,
  type AttachmentStore,
} from '@dsh/attachment'
import { resolveDshHome } from '@dsh/home-paths'
import type {} from '@dsh/webserver'

export const name = 'attachment-local'

export interface AttachmentLocalConfig {
  /** Store root; default `<DSH_HOME>/attachments/v1`. */
  root?: string
  /** Largest image admitted (bytes). */
  maxBytes: number
  /** Largest image admitted (width x height). */
  maxPixels: number
  /** Serve POST /attachments and GET /attachments/<id> when ctx.webServer is mounted. */
  http: boolean
}

export const Config: Schema<Partial<AttachmentLocalConfig>, AttachmentLocalConfig> = Schema.object({
  root: Schema.string().description('Store root; default <DSH_HOME>/attachments/v1.'),
  maxBytes: Schema.natural()
    .min(1)
    .default(5 * 1024 * 1024)
    .description('Largest image admitted, in bytes.'),
  maxPixels: Schema.natural()
    .min(1)
    .default(40_000_000)
    .description('Largest image admitted, in pixels (width x height).'),
  http: Schema.boolean().default(true).description('Serve the upload and download routes on ctx.webServer.'),
}) as Schema<Partial<AttachmentLocalConfig>, AttachmentLocalConfig>

const STATUS: Record<string, number> = {
  NOT_AN_IMAGE: 415,
  TOO_LARGE: 413,
  TOO_MANY_PIXELS: 413,
  EMPTY: 400,
  BAD_ID: 400,
  NOT_FOUND: 404,
  CORRUPT: 500,
}

async function syncDir(path: string): Promise<void> {
  if (process.platform === 'win32') return
  const handle = await open(path, 'r')
  try {
    await handle.sync()
  } finally {
    await handle.close()
  }
}

export class LocalAttachments extends Service implements AttachmentStore {
  static Config = Config
  readonly root: string
  private readonly config: AttachmentLocalConfig
  private durable?: Promise<void>

  constructor(ctx: Context, config: Partial<AttachmentLocalConfig> = {}) {
    super(ctx, 'attachments')
    this.config = { maxBytes: 5 * 1024 * 1024, maxPixels: 40_000_000, http: true, ...config }
    this.root = config.root ?? join(resolveDshHome(), 'attachments', 'v1')
    if (this.config.http) ctx.inject(['webServer'], (inner) => this.routes(inner))
  }

  pathOf(id: string): string {
    if (!isAttachmentId(id))
      throw new AttachmentError('BAD_ID', `not an attachment id: ${JSON.stringify(id)} (expected sha256:<64 hex>)`)
    const hex = id.slice(7)
    return join(this.root, 'objects', hex.slice(0, 2), hex)
  }

  /** Creates the store directories and syncs every ancestor up to the filesystem root, once. */
  private ensureDurable(): Promise<void> {
    return (this.durable ??= (async () => {
      await mkdir(join(this.root, 'staging'), { recursive: true, mode: 0o700 })
      await mkdir(join(this.root, 'objects'), { recursive: true, mode: 0o700 })
      let dir = join(this.root, 'objects')
      const top = parse(dir).root
      for (;;) {
        await syncDir(dir).catch(() => {})
        if (dir === top) break
        dir = dirname(dir)
      }
    })().catch((error) => {
      this.durable = undefined
      throw error
    }))
  }

  async put(data: Uint8Array, options: { name?: string } = {}): Promise<AttachmentRef> {
    const info = admit(data, this.config)
    const hex = createHash('sha256').update(data).digest('hex')
    const id = `sha256:${hex}` as const
    const ref: AttachmentRef = { id, ...info, bytes: data.length, ...(options.name ? { name: options.name } : {}) }
    const target = this.pathOf(id)
    if (
      await stat(target).then(
        (s) => s.size === data.length,
        () => false,
      )
    )
      return ref
    await this.ensureDurable()
    const temp = join(this.root, 'staging', `${hex}.${process.pid}.${randomBytes(6).toString('hex')}`)
    const handle = await open(temp, 'wx', 0o600)
    try {
      await handle.writeFile(data)
      await handle.sync()
    } finally {
      await handle.close()
    }
    try {
      const prefix = dirname(target)
      const created = await mkdir(prefix, { recursive: true, mode: 0o700 })
      try {
        await link(temp, target)
      } catch (error) {
        // Another writer published the same content first: identical bytes by construction.
        if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error
      }
      await syncDir(prefix)
      if (created) await syncDir(join(this.root, 'objects'))
    } finally {
      await unlink(temp).catch(() => {})
    }
    return ref
  }

  async get(id: string): Promise<{ ref: AttachmentRef; data: Buffer }> {
    const path = this.pathOf(id)
    let data: Buffer
    try {
      data = await readFile(path)
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT')
        throw new AttachmentError('NOT_FOUND', `no attachment ${id}`)
      throw error
    }
    if (`sha256:${createHash('sha256').update(data).digest('hex')}` !== id)
      throw new AttachmentError('CORRUPT', `attachment ${id} does not match its digest`)
    // Limits are admission policy only: a stored object stays readable if they shrink later.
    const info = sniffImage(data)
    if (!info) throw new AttachmentError('CORRUPT', `attachment ${id} is no longer a readable image`)
    return { ref: { id: id as AttachmentRef['id'], ...info, bytes: data.length }, data }
  }

  async has(id: string): Promise<boolean> {
    return stat(this.pathOf(id)).then(
      () => true,
      () => false,
    )
  }

  private routes(inner: Context): void {
    const server = inner.webServer
    const fail = (res: ServerResponse, status: number, code: string, message: string) => {
      res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify({ error: { code, message } }))
    }
    const answerError = (res: ServerResponse, error: unknown) => {
      if (error instanceof AttachmentError) return fail(res, STATUS[error.code] ?? 400, error.code, error.message)
      throw error
    }
    server.register({
      path: '/attachments',
      match: 'prefix',
      handle: async (req: IncomingMessage, res: ServerResponse, info: { url: URL }) => {
        const rest = info.url.pathname.slice('/attachments'.length)
        if (req.method === 'GET' && rest.startsWith('/')) {
          try {
            const { ref, data } = await this.get(decodeURIComponent(rest.slice(1)))
            res
              .writeHead(200, {
                'content-type': ref.mediaType,
                'content-length': data.length,
                'cache-control': 'private, max-age=31536000, immutable',
                'x-content-type-options': 'nosniff',
              })
              .end(data)
          } catch (error) {
            answerError(res, error)
          }
          return
        }
        if (req.method !== 'POST' || rest !== '')
          return fail(
            res,
            405,
            'METHOD_NOT_ALLOWED',
            'POST /attachments with JSON {name?, data: <base64>}; GET /attachments/<id>',
          )
        // JSON like every write of the web host (the access gate's CSRF rule); base64 costs 4/3.
        let body: { name?: unknown; data?: unknown }
        try {
          body = (await server.readJson(req, {
            maxBytes: Math.ceil((this.config.maxBytes * 4) / 3) + 4096,
          })) as typeof body
        } catch (error) {
          if ((error as { status?: number }).status === 413)
            return fail(res, 413, 'TOO_LARGE', `the image is over the limit of ${this.config.maxBytes} bytes`)
          throw error
        }
        if (!body || typeof body !== 'object' || typeof body.data !== 'string')
          return fail(res, 400, 'INVALID_PARAMS', 'data: expected the image as a base64 string')
        const bytes = Buffer.from(body.data, 'base64')
        try {
          const name = typeof body.name === 'string' ? body.name.slice(0, 200) : undefined
          const ref = await this.put(bytes, name ? { name } : {})
          res
            .writeHead(200, { 'content-type': 'application/json' })
            .end(JSON.stringify({ attachment: ref, token: attachmentToken(ref) }))
        } catch (error) {
          answerError(res, error)
        }
      },
    })
  }
}

export default LocalAttachments
