// @dsh/plain-service: the object behind a Cordis service reference.
import { originalOf } from '@dsh/cordis-compat'

/**
 * The plain object behind `ctx.<service>` (or behind `this` inside a service method). Cordis hands
 * out a traceable proxy that routes every property read through its traps; code on a hot path
 * reads the plain object once (at apply, or cached until `internal/service` reports a change) and
 * then pays a plain property read. Values that are not Cordis proxies come back unchanged, and so
 * do `undefined` and `null`.
 */
export function plainService<T>(value: T): T {
  return originalOf(value)
}
