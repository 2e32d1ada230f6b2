// @dsh/session-log-export: a session as a ZIP: `session.jsonl` (the log, one event per line),
// `manifest.json`, and every image attachment the log references under `attachments/`. The
// snapshot is a prefix of the log fixed when the export starts, so exporting a running session
// gives a consistent log (the manifest says it was running and where the snapshot ends). Served
// at `GET /export/<sessionId>.zip` on ctx.webServer, with an `/export` command that names the URL.
import { extname } from 'node:path'
import type { Context } from 'cordis'
import Schema from 'schemastery'
import { findTokens } from '@dsh/attachment'
import type {} from '@dsh/api-gateway'
import type {} from '@dsh/commands'
import type {} from '@dsh/webserver'
import type { SessionRow, WireEvent } from '@dsh/web-protocol'
import { zip, type ZipEntry } from './zip.ts'

export { zip, crc32, type ZipEntry } from './zip.ts'

export const name = 'session-log-export'

export interface SessionLogExportConfig {
  /** URL prefix of the download route. */
  path: string
  /** Register the `/export` command. */
  command: boolean
}

export const Config: Schema<Partial<SessionLogExportConfig>, SessionLogExportConfig> = Schema.object({
  path: Schema.string()
    .pattern(/^\/[a-z0-9/-]*[a-z0-9]$/)
    .default('/export')
    .description('URL prefix of the download route.'),
  command: Schema.boolean().default(true).description('Register the /export command (prints the download URL).'),
}) as Schema<Partial<SessionLogExportConfig>, SessionLogExportConfig>

export interface ExportManifest {
  format: 'dsh-session-export/1'
  sessionId: string
  cwd?: string
  title?: string
  exportedAt: string
  /** Events in session.jsonl (seq 0 .. events - 1). */
  events: number
  /** The session was running (or waiting) when the snapshot was taken. */
  running: boolean
  attachments: Array<{ id: string; file: string }>
  missingAttachments: string[]
}

export class ExportError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message)
  }
}

type Api = Context['api']
const call = <T>(api: Api, method: string, params: unknown) =>
  api.call(method, params, { loopback: true, signal: AbortSignal.timeout(30_000) }) as Promise<T>

/** Builds the ZIP of one session from the web host's session methods and the attachment store. */
export async function exportSession(
  ctx: Context,
  api: Api,
  sessionId: string,
): Promise<{ zip: Buffer; manifest: ExportManifest }> {
  const { sessions } = await call<{ sessions: SessionRow[] }>(api, 'sessions.list', {
    includeArchived: true,
    limit: 500,
  })
  const row = sessions.find((s) => s.sessionId === sessionId)
  // The snapshot: the log as long as it is now. Later appends are left out.
  const live = ctx.get('sessions')?.get(sessionId)
  let limit = live ? live.length : Number.POSITIVE_INFINITY
  const events: WireEvent[] = []
  try {
    for (let fromSeq = 0; fromSeq < limit; ) {
      const page = await call<{ events: WireEvent[]; nextSeq: number; end: boolean }>(api, 'sessions.history', {
        sessionId,
        fromSeq,
        limit: 5000,
      })
      for (const e of page.events) if (e.seq < limit) events.push(e)
      if (page.end || page.events.length === 0) {
        limit = Math.min(limit, page.nextSeq)
        break
      }
      fromSeq = page.nextSeq
    }
  } catch (error) {
    if ((error as { code?: string }).code === 'SESSION_NOT_FOUND')
      throw new ExportError(404, 'SESSION_NOT_FOUND', `no session ${JSON.stringify(sessionId)}`)
    throw error
  }
  const ids = new Set<string>()
  for (const e of events) {
    if (e.type !== 'user/message') continue
    for (const block of (e.data as { content?: Array<{ type: string; text?: string }> }).content ?? []) {
      if (block.type === 'text' && block.text) for (const token of findTokens(block.text)) ids.add(token.id)
    }
  }
  const entries: ZipEntry[] = [
    {
      name: 'session.jsonl',
      data: Buffer.from(events.map((e) => JSON.stringify(e)).join('\n') + (events.length ? '\n' : '')),
    },
  ]
  const attachments: ExportManifest['attachments'] = []
  const missing: string[] = []
  const store = ctx.get('attachments')
  for (const id of ids) {
    try {
      if (!store) throw new Error('no attachment store')
      const { ref, data } = await store.get(id)
      const file = `attachments/${id.slice(7)}${extname(`x.${ref.mediaType.split('/')[1]}`)}`
      entries.push({ name: file, data })
      attachments.push({ id, file })
    } catch {
      missing.push(id)
    }
  }
  const status = row?.status ?? 'stored'
  const manifest: ExportManifest = {
    format: 'dsh-session-export/1',
    sessionId,
    ...(row?.cwd ? { cwd: row.cwd } : {}),
    ...(row?.title ? { title: row.title } : {}),
    exportedAt: new Date().toISOString(),
    events: events.length,
    running: status === 'running' || status === 'waiting',
    attachments,
    missingAttachments: missing,
  }
  entries.unshift({ name: 'manifest.json', data: Buffer.from(JSON.stringify(manifest, null, 2) + '\n') })
  return { zip: zip(entries), manifest }
}

export function apply(ctx: Context, raw: Partial<SessionLogExportConfig> = {}): void {
  const config: SessionLogExportConfig = { path: '/export', command: true, ...raw }
  ctx.inject(['api', 'webServer'], (inner) => {
    inner.webServer.register({
      path: config.path,
      match: 'prefix',
      handle: async (req, res, info) => {
        const m = new RegExp(`^${config.path}/([A-Za-z0-9_-]+)\\.zip$`).exec(info.url.pathname)
        const fail = (status: number, code: string, message: string) =>
          res
            .writeHead(status, { 'content-type': 'application/json' })
            .end(JSON.stringify({ error: { code, message } }))
        if (req.method !== 'GET' || !m)
          return fail(
            req.method !== 'GET' ? 405 : 404,
            req.method !== 'GET' ? 'METHOD_NOT_ALLOWED' : 'NOT_FOUND',
            `GET ${config.path}/<sessionId>.zip`,
          )
        try {
          const { zip: body } = await exportSession(inner, inner.api, m[1])
          res
            .writeHead(200, {
              'content-type': 'application/zip',
              'content-length': body.length,
              'content-disposition': `attachment; filename="dsh-session-${m[1]}.zip"`,
              'cache-control': 'no-store',
            })
            .end(body)
        } catch (error) {
          if (error instanceof ExportError) return fail(error.status, error.code, error.message)
          throw error
        }
      },
    })
  })
  if (config.command) {
    ctx.inject(['commands'], (inner) => {
      inner.commands.register({
        name: 'export',
        description: 'Download this session (log and image attachments) as a ZIP.',
        run: (_args, { session }) => `Session log: ${config.path}/${session.id}.zip`,
      })
    })
  }
}

export default { name, Config, apply }
