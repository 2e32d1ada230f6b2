// The exporter of `mode: local`: each batch the SDK hands over becomes one line of OTLP/JSON (the
// body an OTLP/HTTP JSON request would carry) appended to a file under $DSH_HOME, rotated by size.
// Nothing opens a socket; a collector can be fed the lines later, one request per line.
import { appendFile, mkdir, rename, rm, stat } from 'node:fs/promises'
import { dirname } from 'node:path'
import type { LogRecordExporter, ReadableLogRecord } from '@opentelemetry/sdk-logs'

/** The SDK's ExportResult, without a dependency on @opentelemetry/core (0 = success, 1 = failed). */
export interface ExportResult {
  code: 0 | 1
  error?: Error
}

export interface LocalFileOptions {
  file: string
  /** A batch that would take the file past this many bytes rotates it first. */
  maxBytes: number
  /** Rotated files kept (`file.1` newest ... `file.N`); 0 truncates instead. */
  keep: number
}

type AnyValue =
  | { stringValue: string }
  | { boolValue: boolean }
  | { intValue: string }
  | { doubleValue: number }
  | { arrayValue: { values: AnyValue[] } }
  | { kvlistValue: { values: KeyValue[] } }
  | Record<string, never>
interface KeyValue {
  key: string
  value: AnyValue
}

function anyValue(value: unknown): AnyValue {
  if (typeof value === 'string') return { stringValue: value }
  if (typeof value === 'boolean') return { boolValue: value }
  if (typeof value === 'number') return Number.isInteger(value) ? { intValue: String(value) } : { doubleValue: value }
  if (Array.isArray(value)) return { arrayValue: { values: value.map(anyValue) } }
  if (value && typeof value === 'object') return { kvlistValue: { values: keyValues(value as object) } }
  return {}
}

function keyValues(object: object): KeyValue[] {
  return Object.entries(object)
    .filter(([, v]) => v !== undefined)
    .map(([key, v]) => ({ key, value: anyValue(v) }))
}

const nanos = ([seconds, ns]: readonly [number, number]) => (BigInt(seconds) * 1_000_000_000n + BigInt(ns)).toString()

/** One OTLP/JSON ExportLogsServiceRequest for a batch: resource once, records grouped by scope. */
export function otlpJson(logs: readonly ReadableLogRecord[]): object {
  const resources = new Map<object, Map<string, { scope: object; logRecords: object[] }>>()
  for (const log of logs) {
    let scopes = resources.get(log.resource)
    if (!scopes) resources.set(log.resource, (scopes = new Map()))
    const { name, version } = log.instrumentationScope
    const key = `${name}\n${version ?? ''}`
    let group = scopes.get(key)
    if (!group) scopes.set(key, (group = { scope: { name, ...(version ? { version } : {}) }, logRecords: [] }))
    group.logRecords.push({
      timeUnixNano: nanos(log.hrTime),
      observedTimeUnixNano: nanos(log.hrTimeObserved),
      ...(log.severityNumber !== undefined ? { severityNumber: log.severityNumber } : {}),
      ...(log.severityText ? { severityText: log.severityText } : {}),
      ...(log.eventName ? { eventName: log.eventName } : {}),
      ...(log.body !== undefined ? { body: anyValue(log.body) } : {}),
      attributes: keyValues(log.attributes),
    })
  }
  return {
    resourceLogs: [...resources].map(([resource, scopes]) => ({
      resource: { attributes: keyValues((resource as { attributes: object }).attributes) },
      scopeLogs: [...scopes.values()],
    })),
  }
}

export class LocalFileExporter implements LogRecordExporter {
  private chain: Promise<unknown> = Promise.resolve()

  constructor(private readonly options: LocalFileOptions) {}

  export(logs: ReadableLogRecord[], resultCallback: (result: ExportResult) => void): void {
    const line = `${JSON.stringify(otlpJson(logs))}\n`
    this.chain = this.chain
      .then(() => this.append(line))
      .then(
        () => resultCallback({ code: 0 }),
        (error: Error) => resultCallback({ code: 1, error }),
      )
  }

  private async append(line: string): Promise<void> {
    const { file, maxBytes, keep } = this.options
    await mkdir(dirname(file), { recursive: true, mode: 0o700 })
    const size = await stat(file).then(
      (s) => s.size,
      () => 0,
    )
    if (size > 0 && size + Buffer.byteLength(line) > maxBytes) {
      if (keep === 0) await rm(file, { force: true })
      else {
        await rm(`${file}.${keep}`, { force: true })
        for (let i = keep - 1; i >= 1; i--) await rename(`${file}.${i}`, `${file}.${i + 1}`).catch(() => {})
        await rename(file, `${file}.1`)
      }
    }
    await appendFile(file, line, { mode: 0o600 })
  }

  async forceFlush(): Promise<void> {
    await this.chain
  }

  async shutdown(): Promise<void> {
    await this.chain
  }
}
