// The composed rows as the loader takes them (names resolved, `!!js` disabled evaluated), and the
// fail-loud check of a mounted tree: every enabled row active, else one failure naming why.
import type { Context } from 'cordis'
import { type Entry, evaluate } from '@cordisjs/plugin-loader'
import { fiberError, isFiberActive, unmetInjects, type FiberLike } from '@dsh/cordis-compat'
import { isJsExpr, type ResolvedRow } from '@dsh/app-compose'
import { describeConfigError, firstLine, type BootFailure } from './failures.ts'
import type { DshLoader } from './boot.ts'

export interface Prepared {
  rows: Record<string, unknown>[]
  failures: BootFailure[]
  /** Every enabled row (children of groups included) with the row it came from. */
  enabled: ResolvedRow[]
}

export function prepareRows(rows: ResolvedRow[], ctx: Context): Prepared {
  const failures: BootFailure[] = []
  const enabled: ResolvedRow[] = []
  const prepare = (r: ResolvedRow): Record<string, unknown> => {
    const out: Record<string, unknown> = { ...r.row }
    if (isJsExpr(r.row.disabled)) {
      try {
        out.disabled = Boolean(evaluate(ctx, r.row.disabled.__jsExpr))
      } catch (error) {
        failures.push({
          id: r.row.id,
          name: r.row.name,
          kind: 'disabled',
          cause: `field disabled: !!js ${r.row.disabled.__jsExpr}: ${firstLine(error)}`,
        })
        out.disabled = true
      }
    }
    if (out.disabled) return out
    enabled.push(r)
    if (r.resolveError) failures.push({ id: r.row.id, name: r.row.name, kind: 'resolve', cause: r.resolveError })
    out.name = r.url ?? r.row.name
    if (r.children) out.config = r.children.map(prepare)
    return out
  }
  return { rows: rows.map(prepare), failures, enabled }
}

/** One fail-loud check of the mounted tree: every enabled row is active, else one failure each. */
export function checkRows(
  loader: DshLoader,
  enabled: readonly ResolvedRow[],
  errors: readonly LoaderError[],
): BootFailure[] {
  const failures: BootFailure[] = []
  const unattributed = errors.filter((e) => !e.entry)
  for (const r of enabled) {
    const { id, name } = r.row
    const entry = loader.store[id] as Entry | undefined
    const fiber = entry?.fiber as unknown as FiberLike | undefined
    if (!entry || !fiber) {
      const own =
        errors.find((e) => e.entry === entry && entry) ??
        unattributed.find((e) => String((e.error as Error)?.stack).includes(`#${id}`)) ??
        unattributed[0]
      failures.push({ id, name, kind: 'import', cause: own ? `cannot load: ${firstLine(own.error)}` : 'did not mount' })
      continue
    }
    const error = fiberError(fiber) as Error | undefined
    if (error) {
      failures.push(
        error?.name === 'ValidationError'
          ? { id, name, kind: 'config', cause: describeConfigError(error) }
          : { id, name, kind: 'apply', cause: `apply failed: ${firstLine(error)}` },
      )
      continue
    }
    if (!isFiberActive(fiber)) {
      const missing = unmetInjects(fiber)
      failures.push({
        id,
        name,
        kind: 'inject',
        cause: missing.length
          ? `unmet inject: ${missing.map((n) => `"${n}"`).join(', ')} (no active row provides ${missing.length > 1 ? 'them' : 'it'})`
          : `did not become active (state ${fiber.state})`,
      })
    }
  }
  return failures
}

export interface LoaderError {
  entry?: Entry
  error: unknown
}
