// Hot reload of a booted tree: diff the new rows against the last good ones, validate changed
// configs before touching anything, update in place or re-create, and roll back a change that
// does not come up.
import { type Context, resolveConfig } from 'cordis'
import { type Entry, interpolate } from '@cordisjs/plugin-loader'
import type { Composition } from '@dsh/app-compose'
import { hasUserFileRows, shareInstallModules } from './shared-modules.ts'
import { describeConfigError, firstLine, formatFailure, type BootFailure } from './failures.ts'
import { checkRows, prepareRows, type LoaderError, type Prepared } from './rows.ts'
import type { DshLoader } from './boot.ts'

/** What one `BootedTree.reload()` did. */
export interface ReloadReport {
  /** False when the new rows did not come up (the previous rows were restored) or could not be prepared. */
  ok: boolean
  /** Ids whose row changed in place (config, disabled) or was re-created (name, inject, ...). */
  changed: string[]
  added: string[]
  removed: string[]
  /** Why the reload was refused or rolled back; empty when `ok`. */
  failures: BootFailure[]
  /** Set when the reload did not run at all (the app is exiting). */
  message?: string
}

/** The Cordis fiber fields a reload reads to validate a new config before restarting a row. */
interface RuntimeInternals {
  uid: number | null
  runtime?: { Config?: unknown; callback: Record<symbol, unknown> }
}

/** Stable JSON of a prepared row (sorted keys; a `!!js` value serializes as its expression). */
function stable(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(stable).join(',')}]`
  if (value && typeof value === 'object') {
    return `{${Object.keys(value)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${stable((value as Record<string, unknown>)[k])}`)
      .join(',')}}`
  }
  return JSON.stringify(value) ?? 'null'
}

/** A deep copy the loader may mutate (it reorders keys and marks unloaded rows disabled). */
function copyRow<T>(value: T): T {
  if (Array.isArray(value)) return value.map(copyRow) as T
  if (value && typeof value === 'object' && Object.getPrototypeOf(value) === Object.prototype) {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, copyRow(v)])) as T
  }
  return value
}

/** Fields a running entry can take in place; a change to any other field re-creates the row. */
const IN_PLACE = new Set(['config', 'disabled'])

export function reloader(state: {
  ctx: Context
  loader: DshLoader
  errors: LoaderError[]
  stderr: NodeJS.WritableStream
  good: Prepared
}) {
  const { ctx, loader, errors } = state
  let queue: Promise<unknown> = Promise.resolve()
  const run = async (comp: Composition): Promise<ReloadReport> => {
    const next = prepareRows(comp.rows, ctx)
    if (hasUserFileRows(comp.rows, [comp.profile.dir])) shareInstallModules(comp.installBase)
    const report: ReloadReport = { ok: false, changed: [], added: [], removed: [], failures: next.failures }
    if (next.failures.length) return report
    const before = new Map(state.good.rows.map((r) => [r.id as string, r]))
    const after = new Map(next.rows.map((r) => [r.id as string, r]))
    const recreate: string[] = []
    for (const [id, row] of after) {
      const old = before.get(id)
      if (!old) report.added.push(id)
      else if (stable(old) !== stable(row)) {
        report.changed.push(id)
        const fields = new Set(
          [...Object.keys(old), ...Object.keys(row)].filter((k) => stable(old[k]) !== stable(row[k])),
        )
        if ([...fields].some((f) => !IN_PLACE.has(f))) recreate.push(id)
      }
    }
    for (const id of before.keys()) if (!after.has(id)) report.removed.push(id)
    if (!report.added.length && !report.changed.length && !report.removed.length) return { ...report, ok: true }

    // A new config for a running row is validated first: Cordis would throw it from inside the
    // loader's update, leaving the old config running without telling anyone.
    for (const id of report.changed) {
      const row = after.get(id)!
      if (recreate.includes(id) || row.disabled) continue
      const entry = loader.store[id] as Entry | undefined
      const fiber = entry?.fiber as unknown as RuntimeInternals | undefined
      if (!entry || !fiber?.uid || !fiber.runtime || fiber.runtime.callback[Symbol.for('cordis.group')]) continue
      try {
        resolveConfig(fiber.runtime as never, interpolate(entry.ctx, row.config))
      } catch (error) {
        const name = String(next.enabled.find((r) => r.row.id === id)?.row.name ?? row.name)
        report.failures.push(
          (error as Error)?.name === 'ValidationError'
            ? { id, name, kind: 'config', cause: describeConfigError(error as Error) }
            : { id, name, kind: 'config', cause: `config: ${firstLine(error)}` },
        )
      }
    }
    if (report.failures.length) return report

    const mount = async (rows: Record<string, unknown>[], fresh: readonly string[]) => {
      for (const id of fresh) if (loader.store[id]) loader.root.remove(id)
      await loader.root.update(copyRow(rows) as never)
      await loader.await()
    }
    const seen = errors.length
    await mount(next.rows, recreate)
    const failures = checkRows(loader, next.enabled, errors.slice(seen))
    if (!failures.length) {
      state.good = next
      return { ...report, ok: true }
    }
    // Back to the last good rows: re-created and added rows go, changed ones get their old fields.
    const roots = failures.filter((f) => f.kind !== 'inject')
    report.failures = roots.length ? roots : failures
    const restoreSeen = errors.length
    await mount(state.good.rows, recreate)
    const still = checkRows(loader, state.good.enabled, errors.slice(restoreSeen))
    for (const f of still)
      state.stderr.write(
        `dsh: warning: after a failed reload, the previous row did not come back: ${formatFailure(f).replace(/^dsh: /, '')}\n`,
      )
    return report
  }
  return (comp: Composition): Promise<ReloadReport> => {
    const result = queue.then(() => run(comp))
    queue = result.catch(() => undefined)
    return result
  }
}
