// @dsh/session-telemetry-otel: the OpenTelemetry logs backend of the telemetry seam. Off by default:
// `enabled: true` in its row, or DSH_TELEMETRY_ENABLED=1, turns it on. When on, it composes the OTel
// JS SDK as-is (LoggerProvider -> BatchLogRecordProcessor -> OTLP/HTTP log exporter) and maps each
// record handed over by `ctx.sessionTelemetry` onto `logger.emit()`: the record kind is the event
// name, its figures are attributes, and the body is empty unless content capture is on.
import type { Context } from 'cordis'
import Schema from 'schemastery'
import { version as dshVersion, PRODUCT_NAME } from '@dsh/brand'
import { envFlag, type TelemetryRecord } from '@dsh/session-telemetry'
import type {} from '@dsh/anonymous-user-id'
import type {} from '@dsh/app-boot'
import type { Logger } from '@opentelemetry/api-logs'

export const name = '@dsh/session-telemetry-otel'
export const inject = ['sessionTelemetry']

/** Instrumentation scope of the records. */
export const SCOPE = '@dsh/session-telemetry-otel'
export const DEFAULT_ENDPOINT = 'http://127.0.0.1:4318/v1/logs'

export interface Config {
  enabled: boolean
  /** OTLP/HTTP logs endpoint (the full URL, `/v1/logs` included). */
  endpoint: string
  /** Extra request headers (e.g. an authorization token). */
  headers: { [name: string]: string }
  /** Batch delay of the processor. */
  scheduledDelayMillis: number
  /** Records exported per request, at most. */
  maxExportBatchSize: number
}

/** `k=v,k2=v2` (the OTEL_EXPORTER_OTLP_HEADERS form) as an object; malformed pairs are skipped. */
export function parseHeaders(value: string | undefined): { [name: string]: string } {
  const out: { [name: string]: string } = {}
  for (const pair of (value ?? '').split(',')) {
    const at = pair.indexOf('=')
    if (at <= 0) continue
    out[decodeURIComponent(pair.slice(0, at).trim())] = decodeURIComponent(pair.slice(at + 1).trim())
  }
  return out
}

const env = process.env
export const Config: Schema<Partial<Config>, Config> = Schema.object({
  enabled: Schema.boolean()
    .default(envFlag(env.DSH_TELEMETRY_ENABLED))
    .description('Export telemetry (default: $DSH_TELEMETRY_ENABLED, else off).'),
  endpoint: Schema.string()
    .default(env.DSH_TELEMETRY_ENDPOINT || env.OTEL_EXPORTER_OTLP_LOGS_ENDPOINT || DEFAULT_ENDPOINT)
    .description(
      'OTLP/HTTP logs URL (default: $DSH_TELEMETRY_ENDPOINT, $OTEL_EXPORTER_OTLP_LOGS_ENDPOINT, then the local collector port).',
    ),
  headers: Schema.dict(String)
    .default(parseHeaders(env.DSH_TELEMETRY_HEADERS))
    .description('Request headers (default: $DSH_TELEMETRY_HEADERS as k=v,k2=v2).'),
  scheduledDelayMillis: Schema.natural().min(10).default(2000).description('Batch delay.'),
  maxExportBatchSize: Schema.natural().min(1).default(256),
})

type Attributes = { [key: string]: string | number | boolean }

/** A record as flat OTel attributes (`dsh.` prefixed; token counts as `dsh.tokens.*`). */
export function attributesOf(record: TelemetryRecord): Attributes {
  const out: Attributes = {}
  for (const [key, value] of Object.entries(record)) {
    if (value === undefined || key === 'kind') continue
    if (key === 'tokens' && value && typeof value === 'object') {
      for (const [k, v] of Object.entries(value)) out[`dsh.tokens.${k}`] = v as number
    } else if (typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean') {
      out[`dsh.${key.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`)}`] = value
    }
  }
  return out
}

/** Text fields that are content: they go to the body, never to attributes. */
const CONTENT_KEYS = ['prompt', 'output', 'arguments', 'result'] as const

export function apply(ctx: Context, config: Config): void {
  if (!config.enabled) return
  if (!/^https?:\/\//.test(config.endpoint))
    throw new Error(`session-telemetry-otel: endpoint must be an http(s) URL, got ${JSON.stringify(config.endpoint)}`)
  let provider: { forceFlush(): Promise<void>; shutdown(): Promise<void> } | undefined
  let logger: Logger | undefined
  const pending: TelemetryRecord[] = []
  // The SDK is loaded only when telemetry is on; records arriving meanwhile wait in `pending`.
  const ready = (async () => {
    const [{ LoggerProvider, BatchLogRecordProcessor }, { OTLPLogExporter }, { resourceFromAttributes }] =
      await Promise.all([
        import('@opentelemetry/sdk-logs'),
        import('@opentelemetry/exporter-logs-otlp-http'),
        import('@opentelemetry/resources'),
      ])
    const userId = ctx.get('anonymousUserId')?.get()
    const exporter = new OTLPLogExporter({ url: config.endpoint, headers: config.headers })
    const sdk = new LoggerProvider({
      resource: resourceFromAttributes({
        'service.name': PRODUCT_NAME,
        'service.version': dshVersion,
        ...(userId ? { 'user.id': userId } : {}),
      }),
      processors: [
        new BatchLogRecordProcessor({
          exporter,
          scheduledDelayMillis: config.scheduledDelayMillis,
          maxExportBatchSize: config.maxExportBatchSize,
        }),
      ],
    })
    provider = sdk
    logger = sdk.getLogger(SCOPE, dshVersion)
    for (const record of pending.splice(0)) emit(record)
  })()
  ready.catch((error) => ctx.emit('session-telemetry/error', name, error))

  function emit(record: TelemetryRecord): void {
    if (!logger) {
      pending.push(record)
      return
    }
    const body: { [key: string]: string } = {}
    const plain = { ...record } as { [key: string]: unknown }
    for (const key of CONTENT_KEYS) {
      if (typeof plain[key] === 'string') body[key] = plain[key] as string
      delete plain[key]
    }
    const failed =
      record.kind === 'tool_call' ? record.isError : record.kind === 'turn' ? record.reason !== 'completed' : false
    logger.emit({
      eventName: `dsh.${record.kind}`,
      timestamp: record.time,
      severityNumber: failed ? 13 : 9, // WARN : INFO
      severityText: failed ? 'WARN' : 'INFO',
      ...(Object.keys(body).length ? { body } : {}),
      attributes: { 'event.name': `dsh.${record.kind}`, ...attributesOf(plain as unknown as TelemetryRecord) },
    })
  }

  ctx.sessionTelemetry.registerExporter({ name, export: emit })
  const flush = async () => {
    await ready.catch(() => {})
    await provider?.forceFlush().catch((error) => ctx.emit('session-telemetry/error', name, error))
  }
  // A stopping app flushes what is batched before the tree unwinds (a one-shot exits right after).
  ctx.on('app/stopping', flush)
  ctx.effect(
    () => () => {
      void ready.then(() => provider?.shutdown()).catch(() => {})
    },
    'session-telemetry-otel: shutdown',
  )
}
