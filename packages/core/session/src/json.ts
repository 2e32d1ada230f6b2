// Lossless-JSON validation with a frozen structured copy, in one pass.
import type { JsonValue } from '@dsh/brand'

/** A value that survives `JSON.parse(JSON.stringify(value))` unchanged (declared in @dsh/brand). */
export type { JsonValue }

/** Thrown when a value is not lossless JSON; `path` names the offending value (`data.a[2].b`). */
export class JsonValueError extends TypeError {
  override name = 'JsonValueError'
  constructor(
    readonly path: string,
    readonly reason: string,
  ) {
    super(`${path} ${reason}`)
  }
}

const IDENTIFIER = /^[A-Za-z_$][A-Za-z0-9_$]*$/
export const joinKey = (path: string, key: string): string =>
  IDENTIFIER.test(key) ? `${path}.${key}` : `${path}[${JSON.stringify(key)}]`
export const joinIndex = (path: string, index: number): string => `${path}[${index}]`

function describe(value: unknown): string {
  if (value === null) return 'null'
  if (typeof value !== 'object') return typeof value
  const proto = Object.getPrototypeOf(value) as { constructor?: { name?: string } } | null
  return proto?.constructor?.name ? `a ${proto.constructor.name} instance` : 'an exotic object'
}

/**
 * Validates that `value` is lossless JSON and returns a deep-frozen copy.
 *
 * Accepted: null, booleans, strings, finite numbers, plain arrays (no holes, no `undefined`
 * elements, no extra properties) and plain objects (prototype `Object.prototype` or `null`,
 * string keys). Object properties whose value is `undefined` are dropped, as JSON does. `-0` is
 * copied as `0`. Everything else (functions, symbols, bigint, NaN, Infinity, Dates, Maps, class
 * instances, symbol keys, cycles) throws `JsonValueError` naming the path.
 */
export function freezeJson(value: unknown, path = 'value'): JsonValue {
  return copy(value, path, new Set())
}

function copy(value: unknown, path: string, ancestors: Set<object>): JsonValue {
  switch (typeof value) {
    case 'string':
    case 'boolean':
      return value
    case 'number':
      if (!Number.isFinite(value)) throw new JsonValueError(path, `is ${value} (only finite numbers are JSON)`)
      return value === 0 ? 0 : value
    case 'undefined':
      throw new JsonValueError(path, 'is undefined')
    case 'object':
      break
    default:
      throw new JsonValueError(path, `is a ${typeof value} (not JSON)`)
  }
  if (value === null) return null
  if (ancestors.has(value)) throw new JsonValueError(path, 'is a circular reference')
  if (Object.getOwnPropertySymbols(value).length > 0) throw new JsonValueError(path, 'has symbol keys (not JSON)')
  ancestors.add(value)
  try {
    if (Array.isArray(value)) {
      if (Object.getPrototypeOf(value) !== Array.prototype)
        throw new JsonValueError(path, `is ${describe(value)} (not a plain array)`)
      const keys = Object.keys(value)
      if (keys.length !== value.length) {
        const hole = findHole(value)
        if (hole >= 0) throw new JsonValueError(joinIndex(path, hole), 'is a hole in a sparse array')
        const extra = keys.find((key) => !/^(0|[1-9][0-9]*)$/.test(key))
        throw new JsonValueError(joinKey(path, extra ?? '?'), 'is a non-index property on an array')
      }
      const out: JsonValue[] = new Array(value.length)
      for (let i = 0; i < value.length; i++) {
        const element: unknown = value[i]
        if (element === undefined) throw new JsonValueError(joinIndex(path, i), 'is undefined inside an array')
        out[i] = copy(element, joinIndex(path, i), ancestors)
      }
      return Object.freeze(out) as JsonValue[]
    }
    const proto: unknown = Object.getPrototypeOf(value)
    if (proto !== Object.prototype && proto !== null)
      throw new JsonValueError(path, `is ${describe(value)} (not a plain object)`)
    const out: { [key: string]: JsonValue } = {}
    for (const key of Object.keys(value)) {
      const field: unknown = (value as Record<string, unknown>)[key]
      if (field === undefined) continue
      const child = copy(field, joinKey(path, key), ancestors)
      if (key === '__proto__')
        Object.defineProperty(out, key, { value: child, enumerable: true, writable: true, configurable: true })
      else out[key] = child
    }
    return Object.freeze(out)
  } finally {
    ancestors.delete(value)
  }
}

function findHole(array: unknown[]): number {
  for (let i = 0; i < array.length; i++) if (!(i in array)) return i
  return -1
}

/**
 * First path at which two JSON-like values differ, or `undefined` when they are equal. Object
 * properties holding `undefined` count as absent (the log drops them).
 */
export function firstDifference(a: unknown, b: unknown, path = 'value'): string | undefined {
  if (Object.is(a, b)) return undefined
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) {
    return typeof a === 'number' && typeof b === 'number' && a === b ? undefined : path
  }
  if (Array.isArray(a) !== Array.isArray(b)) return path
  if (Array.isArray(a) && Array.isArray(b)) {
    const n = Math.min(a.length, b.length)
    for (let i = 0; i < n; i++) {
      const diff = firstDifference(a[i], b[i], joinIndex(path, i))
      if (diff !== undefined) return diff
    }
    return a.length === b.length ? undefined : joinIndex(path, n)
  }
  const ra = a as Record<string, unknown>
  const rb = b as Record<string, unknown>
  const keys = new Set([...Object.keys(ra), ...Object.keys(rb)])
  for (const key of keys) {
    const diff = firstDifference(ra[key], rb[key], joinKey(path, key))
    if (diff !== undefined) return diff
  }
  return undefined
}
