// The OTel JS SDK composed as-is: LoggerProvider -> BatchLogRecordProcessor -> an exporter (the
// OTLP/HTTP JSON log exporter, or the local file one), loaded on the first record so a deployment
// that never exports loads none of it. Records are mapped onto `logger.emit()` under two scopes
// (ledger records of the session log, operational records about telemetry itself), with every
// string scrubbed of the secret values the process knows.
import { redactText } from '@dsh/llm'
import type { TelemetryRecord } from '@dsh/session-telemetry'
import type { AnyValueMap, Logger, LogRecord } from '@opentelemetry/api-logs'
import type { LogRecordExporter, ReadableLogRecord } from '@opentelemetry/sdk-logs'
import { type ExportResult, LocalFileExporter, type LocalFileOptions } from './local-file.ts'

/** Instrumentation scope of the ledger records (model calls, tool calls, turns, feedback). */
export const SCOPE = '@dsh/session-telemetry-otel'
/** Instrumentation scope of the operational records (replays, dropped batches, exporter errors). */
export const OPS_SCOPE = '@dsh/session-telemetry-otel/ops'

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
const CONTENT_KEYS = ['prompt', 'output', 'arguments', 'result', 'note'] as const

/** A seam record as an OTel log record (before scrubbing). */
export function logRecordOf(record: TelemetryRecord): LogRecord {
  const body: { [key: string]: string } = {}
  const plain = { ...record } as { [key: string]: unknown }
  for (const key of CONTENT_KEYS) {
    if (typeof plain[key] === 'string') body[key] = plain[key] as string
    delete plain[key]
  }
  const failed =
    record.kind === 'tool_call' ? record.isError : record.kind === 'turn' ? record.reason !== 'completed' : false
  return {
    eventName: `dsh.${record.kind}`,
    timestamp: record.time,
    severityNumber: failed ? 13 : 9, // WARN : INFO
    severityText: failed ? 'WARN' : 'INFO',
    ...(Object.keys(body).length ? { body } : {}),
    attributes: { 'event.name': `dsh.${record.kind}`, ...attributesOf(plain as unknown as TelemetryRecord) },
  }
}

/** An operational record: `dsh.telemetry.<name>` on the ops scope. */
export function opsRecord(name: string, attributes: Attributes, warn = false): LogRecord {
  const eventName = `dsh.telemetry.${name}`
  return {
    eventName,
    timestamp: Date.now(),
    severityNumber: warn ? 13 : 9,
    severityText: warn ? 'WARN' : 'INFO',
    attributes: { 'event.name': eventName, ...attributes },
  }
}

function scrubValue(value: unknown, secrets: readonly string[]): unknown {
  if (typeof value === 'string') return redactText(value, secrets)
  if (Array.isArray(value)) return value.map((v) => scrubValue(v, secrets))
  if (value && typeof value === 'object')
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, scrubValue(v, secrets)]))
  return value
}

/** `record` with every known secret value in its body and attributes replaced by `[REDACTED]`. */
export function scrubRecord(record: LogRecord, secrets: readonly string[]): LogRecord {
  if (secrets.length === 0) return record
  return {
    ...record,
    ...(record.body !== undefined ? { body: scrubValue(record.body, secrets) as LogRecord['body'] } : {}),
    ...(record.attributes ? { attributes: scrubValue(record.attributes, secrets) as AnyValueMap } : {}),
  }
}

export interface PipelineOptions {
  target:
    | { kind: 'otlp'; endpoint: string; headers: { [name: string]: string } }
    | ({ kind: 'local' } & LocalFileOptions)
  scheduledDelayMillis: number
  maxExportBatchSize: number
  exportTimeoutMillis: number
  /** Resource attributes, read once when the SDK is composed (the anonymous id is created then). */
  resource: () => Attributes
  /** The secret values to scrub, asked once per enqueued group. */
  secrets: () => Promise<string[]>
  /** A batch failed to export; `first` is true for the first failure since the last success. */
  onExportFailed(error: Error | undefined, records: number, first: boolean): void
  /** A batch succeeded after `batches` failed ones that dropped `records`. */
  onRecovered(batches: number, records: number): void
  /** The SDK could not be loaded or composed. */
  onSetupFailed(error: unknown): void
}

/** Wraps an exporter to see each batch's outcome; the SDK's own handling is unchanged. */
class ReportingExporter implements LogRecordExporter {
  private failedBatches = 0
  private failedRecords = 0

  constructor(
    private readonly inner: LogRecordExporter,
    private readonly options: PipelineOptions,
  ) {}

  export(logs: ReadableLogRecord[], resultCallback: (result: ExportResult) => void): void {
    this.inner.export(logs, (result) => {
      if (result.code !== 0) {
        this.failedBatches++
        this.failedRecords += logs.length
        this.options.onExportFailed(result.error, logs.length, this.failedBatches === 1)
      } else if (this.failedBatches > 0) {
        const batches = this.failedBatches
        const records = this.failedRecords
        this.failedBatches = 0
        this.failedRecords = 0
        this.options.onRecovered(batches, records)
      }
      resultCallback(result as ExportResult)
    })
  }

  forceFlush(): Promise<void> {
    return this.inner.forceFlush()
  }

  shutdown(): Promise<void> {
    return this.inner.shutdown()
  }
}

interface Composed {
  provider: { forceFlush(): Promise<void>; shutdown(): Promise<void> }
  ledger: Logger
  ops: Logger
}

export class Pipeline {
  private composed: Promise<Composed | undefined> | undefined
  private chain: Promise<unknown> = Promise.resolve()

  constructor(private readonly options: PipelineOptions) {}

  /** Whether the SDK has been asked for (a first record arrived). */
  get started(): boolean {
    return this.composed !== undefined
  }

  private compose(): Promise<Composed | undefined> {
    this.composed ??= (async () => {
      const [{ LoggerProvider, BatchLogRecordProcessor }, { resourceFromAttributes }] = await Promise.all([
        import('@opentelemetry/sdk-logs'),
        import('@opentelemetry/resources'),
      ])
      const o = this.options
      let exporter: LogRecordExporter
      if (o.target.kind === 'otlp') {
        const { OTLPLogExporter } = await import('@opentelemetry/exporter-logs-otlp-http')
        exporter = new OTLPLogExporter({
          url: o.target.endpoint,
          headers: o.target.headers,
          timeoutMillis: o.exportTimeoutMillis,
        })
      } else exporter = new LocalFileExporter(o.target)
      const resource = o.resource()
      const provider = new LoggerProvider({
        resource: resourceFromAttributes(resource),
        processors: [
          new BatchLogRecordProcessor({
            exporter: new ReportingExporter(exporter, o),
            scheduledDelayMillis: o.scheduledDelayMillis,
            maxExportBatchSize: o.maxExportBatchSize,
            exportTimeoutMillis: o.exportTimeoutMillis,
          }),
        ],
      })
      const version = String(resource['service.version'] ?? '')
      return { provider, ledger: provider.getLogger(SCOPE, version), ops: provider.getLogger(OPS_SCOPE, version) }
    })().catch((error) => {
      this.options.onSetupFailed(error)
      return undefined
    })
    return this.composed
  }

  /** Emits the records in order (after scrubbing) once the SDK is composed. */
  enqueue(items: ReadonlyArray<{ scope: 'ledger' | 'ops'; record: LogRecord }>): void {
    if (items.length === 0) return
    const composed = this.compose()
    this.chain = this.chain.then(async () => {
      const sdk = await composed
      if (!sdk) return
      const secrets = await this.options.secrets().catch(() => [])
      for (const { scope, record } of items) sdk[scope].emit(scrubRecord(record, secrets))
    })
  }

  /** Exports what is batched now; resolves when the exporter answered (or gave up). */
  async flush(): Promise<void> {
    if (!this.composed) return
    await this.chain
    const sdk = await this.composed
    await sdk?.provider.forceFlush().catch(() => {})
  }

  async shutdown(): Promise<void> {
    if (!this.composed) return
    await this.chain.catch(() => {})
    const sdk = await this.composed
    await sdk?.provider.shutdown().catch(() => {})
  }
}
