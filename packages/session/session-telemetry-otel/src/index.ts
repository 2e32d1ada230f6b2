// @dsh/session-telemetry-otel: the OpenTelemetry backend of the telemetry seam. Its `mode` decides
// what leaves the process: `off` (nothing; the default), `live` (every record of
// `ctx.sessionTelemetry` as the session runs, over OTLP/HTTP), `feedback` (nothing until a human
// records feedback on a session, then the replay of that session's log, over OTLP/HTTP) or `local`
// (the live records written to a rotated file under $DSH_HOME; no socket is opened). See pipeline.ts
// for the SDK composition and the mapping of records onto `logger.emit()`.
import { join } from 'node:path'
import type { Context } from 'cordis'
import Schema from 'schemastery'
import { version as dshVersion, PRODUCT_NAME } from '@dsh/brand'
import { resolveDshHome } from '@dsh/home-paths'
import { secretList, redactText } from '@dsh/llm'
import { createScrubber, DEFAULT_SCRUB_POLICY } from '@dsh/subprocess'
import { envFlag, FEEDBACK_EVENT_TYPES, type SessionTelemetry, type TelemetryRecord } from '@dsh/session-telemetry'
import { FILE_NAME as USER_ID_FILE, readOrCreate, type AnonymousUserId } from '@dsh/anonymous-user-id'
import type {} from '@dsh/app-boot'
import { logRecordOf, opsRecord, Pipeline } from './pipeline.ts'

export { attributesOf, logRecordOf, OPS_SCOPE, SCOPE, scrubRecord } from './pipeline.ts'
export { otlpJson } from './local-file.ts'

export const name = '@dsh/session-telemetry-otel'
export const inject = ['sessionTelemetry']

export const MODES = ['off', 'live', 'feedback', 'local'] as const
export type Mode = (typeof MODES)[number]
export const DEFAULT_ENDPOINT = 'http://127.0.0.1:4318/v1/logs'
/** The local file, relative to $DSH_HOME. */
export const LOCAL_FILE = join('telemetry', 'logs.jsonl')

export interface Config {
  /** off | live | feedback | local (default: $DSH_TELEMETRY_MODE, else live with `enabled`, else off). */
  mode?: string
  /** Older switch: `true` means `mode: live` when no mode is given. */
  enabled?: boolean
  /** OTLP/HTTP logs endpoint (the full URL, `/v1/logs` included). */
  endpoint?: string
  /** Extra request headers (e.g. an authorization token). */
  headers?: { [name: string]: string }
  /** The file of `mode: local` (default $DSH_HOME/telemetry/logs.jsonl). */
  localFile?: string
  /** Size at which the local file is rotated. */
  localMaxBytes: number
  /** Rotated local files kept (`logs.jsonl.1` ... `.N`). */
  localKeep: number
  /** Batch delay of the processor. */
  scheduledDelayMillis: number
  /** Records exported per request, at most. */
  maxExportBatchSize: number
  /** One export attempt (retries included) gives up after this long; a stopping app waits no longer. */
  exportTimeoutMillis: number
}

export const Config: Schema<Partial<Config>, Config> = Schema.object({
  mode: Schema.string().description(
    'off | live | feedback | local (default: $DSH_TELEMETRY_MODE, else live when enabled or $DSH_TELEMETRY_ENABLED, else off).',
  ),
  enabled: Schema.boolean().description('Older switch: true is mode live (when mode is not set).'),
  endpoint: Schema.string().description(
    'OTLP/HTTP logs URL (default: $DSH_TELEMETRY_ENDPOINT, $OTEL_EXPORTER_OTLP_LOGS_ENDPOINT, then the local collector port).',
  ),
  headers: Schema.dict(String).description('Request headers (default: $DSH_TELEMETRY_HEADERS as k=v,k2=v2).'),
  localFile: Schema.string().description('File of mode local (default: $DSH_HOME/telemetry/logs.jsonl).'),
  localMaxBytes: Schema.natural()
    .min(4096)
    .default(5 * 1024 * 1024)
    .description('Rotate the local file past this size.'),
  localKeep: Schema.natural().max(20).default(2).description('Rotated local files kept.'),
  scheduledDelayMillis: Schema.natural().min(10).default(2000).description('Batch delay.'),
  maxExportBatchSize: Schema.natural().min(1).default(256),
  exportTimeoutMillis: Schema.natural().min(100).default(5000).description('Give up on one export after this long.'),
})

/** `k=v,k2=v2` (the OTEL_EXPORTER_OTLP_HEADERS form, values URL-encoded) as an object. */
export function parseHeaders(value: string | undefined, source = '$DSH_TELEMETRY_HEADERS'): { [name: string]: string } {
  const out: { [name: string]: string } = {}
  const pairs = (value ?? '').split(',')
  for (const [i, pair] of pairs.entries()) {
    if (!pair.trim()) continue
    const at = pair.indexOf('=')
    // The value may be a token: never echo it.
    if (at <= 0)
      throw new Error(
        `session-telemetry-otel: headers: pair ${i + 1} of ${source} is not name=value (expected k=v,k2=v2)`,
      )
    out[decodeURIComponent(pair.slice(0, at).trim())] = decodeURIComponent(pair.slice(at + 1).trim())
  }
  return out
}

/** `url` without user info, query or fragment (what may be printed of an endpoint). */
export function displayUrl(url: string): string {
  try {
    const u = new URL(url)
    return `${u.protocol}//${u.host}${u.pathname}`
  } catch {
    return '(not a URL)'
  }
}

export interface Resolved {
  mode: Mode
  endpoint: string
  headers: { [name: string]: string }
  localFile: string
}

/** The effective settings of a row (config over environment), or a one-line error naming the key. */
export function resolveConfig(config: Partial<Config>, env: NodeJS.ProcessEnv = process.env): Resolved {
  let mode: string
  let modeSource = ''
  if (config.mode !== undefined) mode = config.mode
  else if (env.DSH_TELEMETRY_MODE?.trim()) {
    mode = env.DSH_TELEMETRY_MODE.trim()
    modeSource = ' (from $DSH_TELEMETRY_MODE)'
  } else mode = (config.enabled ?? envFlag(env.DSH_TELEMETRY_ENABLED)) ? 'live' : 'off'
  if (!(MODES as readonly string[]).includes(mode))
    throw new Error(
      `session-telemetry-otel: mode must be one of ${MODES.join(', ')}; got ${JSON.stringify(mode.slice(0, 40))}${modeSource}`,
    )
  let endpoint = config.endpoint
  let endpointSource = ''
  if (endpoint === undefined) {
    const fromEnv = env.DSH_TELEMETRY_ENDPOINT
      ? 'DSH_TELEMETRY_ENDPOINT'
      : env.OTEL_EXPORTER_OTLP_LOGS_ENDPOINT
        ? 'OTEL_EXPORTER_OTLP_LOGS_ENDPOINT'
        : undefined
    endpoint = fromEnv ? env[fromEnv]! : DEFAULT_ENDPOINT
    if (fromEnv) endpointSource = ` (from $${fromEnv})`
  }
  const uploads = mode === 'live' || mode === 'feedback'
  if (uploads) {
    let protocol = ''
    try {
      protocol = new URL(endpoint).protocol
    } catch {}
    if (protocol !== 'http:' && protocol !== 'https:')
      throw new Error(
        `session-telemetry-otel: endpoint must be an http(s) URL such as ${DEFAULT_ENDPOINT}; got ${protocol ? displayUrl(endpoint) : JSON.stringify(endpoint.slice(0, 60))}${endpointSource}`,
      )
  }
  return {
    mode: mode as Mode,
    endpoint,
    headers: config.headers ?? (uploads ? parseHeaders(env.DSH_TELEMETRY_HEADERS) : {}),
    localFile: config.localFile ?? join(resolveDshHome(), LOCAL_FILE),
  }
}

/** Once per process, however many rows or reloads report a failing export. */
const REPORTED = Symbol.for('dsh.session-telemetry-otel.export-failure-reported')

export function apply(ctx: Context, raw: Partial<Config> = {}): void {
  const config: Config = {
    localMaxBytes: 5 * 1024 * 1024,
    localKeep: 2,
    scheduledDelayMillis: 2000,
    maxExportBatchSize: 256,
    exportTimeoutMillis: 5000,
    ...raw,
  }
  const settings = resolveConfig(config)
  if (settings.mode === 'off') return
  const uploads = settings.mode !== 'local'

  // Optional services, reached when mounted: the anonymous id's owner and the llm seam (which knows
  // the API keys adapters sent).
  let idService: AnonymousUserId | undefined
  let llm: Context['llm'] | undefined
  ctx.inject(['anonymousUserId'], (inner) => {
    idService = inner.anonymousUserId
    inner.effect(() => () => void (idService = undefined), 'session-telemetry-otel: anonymous id')
  })
  ctx.inject(['llm'], (inner) => {
    llm = inner.llm
    inner.effect(() => () => void (llm = undefined), 'session-telemetry-otel: llm')
  })

  // Values scrubbed from every record: credential-like environment variables, the configured
  // headers, and (per group of records) what the llm seam and the credentials store know.
  const isCredential = createScrubber(DEFAULT_SCRUB_POLICY)
  const fixedSecrets = secretList([
    ...Object.entries(process.env)
      .filter(([key]) => isCredential(key))
      .map(([, value]) => value),
    // A header value whole and its words (the token of `Bearer <token>`).
    ...Object.values(settings.headers).flatMap((v) => [v, ...v.split(/\s+/)]),
  ])
  const secrets = async () => secretList([...fixedSecrets, ...((await llm?.knownSecrets()) ?? [])])

  const where = uploads ? `to ${displayUrl(settings.endpoint)}` : `to ${settings.localFile}`
  const logger = ctx.logger('session-telemetry-otel')
  const pipeline = new Pipeline({
    target: uploads
      ? { kind: 'otlp', endpoint: settings.endpoint, headers: settings.headers }
      : { kind: 'local', file: settings.localFile, maxBytes: config.localMaxBytes, keep: config.localKeep },
    scheduledDelayMillis: config.scheduledDelayMillis,
    maxExportBatchSize: config.maxExportBatchSize,
    exportTimeoutMillis: config.exportTimeoutMillis,
    resource: () => ({
      'service.name': PRODUCT_NAME,
      'service.version': dshVersion,
      // The installation's anonymous id, created here on first use; a local file needs none.
      ...(uploads ? { 'user.id': idService?.get() ?? readOrCreate(join(resolveDshHome(), USER_ID_FILE)).id } : {}),
    }),
    secrets,
    onExportFailed(error, records, first) {
      const reason = redactText((error?.message || 'no answer').replace(/\s+/g, ' ').slice(0, 200), fixedSecrets)
      if (first) logger.warn('telemetry export %s failed (%s); %d records dropped', where, reason, records)
      const state = globalThis as { [REPORTED]?: boolean }
      if (state[REPORTED]) return
      state[REPORTED] = true
      process.stderr.write(
        `dsh: telemetry export ${where} failed (${reason}); its records are dropped and further failures are not reported\n`,
      )
    },
    onRecovered(batches, records) {
      logger.info('telemetry export %s works again after %d failed batches', where, batches)
      pipeline.enqueue([
        { scope: 'ops', record: opsRecord('dropped', { 'dsh.batches': batches, 'dsh.records': records }, true) },
      ])
    },
    onSetupFailed(error) {
      logger.warn('telemetry could not start: %s', (error as Error)?.message ?? error)
      ctx.emit('session-telemetry/error', name, error)
    },
  })

  const ledger = (record: TelemetryRecord) => ({ scope: 'ledger' as const, record: logRecordOf(record) })
  const telemetry: SessionTelemetry = ctx.sessionTelemetry

  if (settings.mode === 'feedback') {
    // Nothing follows the session as it runs. A recorded feedback replays the canonical log of
    // its session from the start (or from what this process already replayed), feedback included.
    const replayed = new Map<string, number>()
    ctx.on('session/event', (session, event) => {
      if (!FEEDBACK_EVENT_TYPES.includes(event.type)) return
      const after = replayed.get(session.id) ?? -1
      const records = telemetry.replay(session.events, session.id).filter((r) => r.seq > after && r.seq <= event.seq)
      replayed.set(session.id, event.seq)
      pipeline.enqueue([
        {
          scope: 'ops',
          record: opsRecord('replay', {
            'dsh.session_id': session.id,
            'dsh.trigger_seq': event.seq,
            'dsh.from_seq': after + 1,
            'dsh.records': records.length,
          }),
        },
        ...records.map(ledger),
      ])
      // Feedback is rare and a host may be stopped at any time: send the replay now.
      void pipeline.flush()
    })
    ctx.on('session/deleted', (session) => void replayed.delete(session.id))
  } else {
    telemetry.registerExporter({ name, export: (record) => pipeline.enqueue([ledger(record)]) })
    ctx.on('session-telemetry/error', (exporter, error) => {
      if (exporter === name) return
      pipeline.enqueue([
        {
          scope: 'ops',
          record: opsRecord(
            'exporter_error',
            { 'dsh.exporter': exporter, 'dsh.error': String((error as Error)?.message ?? error).slice(0, 200) },
            true,
          ),
        },
      ])
    })
  }

  // A stopping app sends what is batched before the tree unwinds (a one-shot exits right after),
  // waiting at most one export timeout so a dead collector never holds the exit.
  ctx.on('app/stopping', async () => {
    let timer: NodeJS.Timeout | undefined
    const bound = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, config.exportTimeoutMillis + 500)
      timer.unref()
    })
    await Promise.race([pipeline.flush(), bound])
    clearTimeout(timer)
  })
  ctx.effect(() => () => void pipeline.shutdown(), 'session-telemetry-otel: shutdown')
}
