// Pure helpers shared by every settings provider: namespace rules, patch validation and merging.

/** A value a settings document can hold: what YAML/JSON round-trips losslessly. */
export type SettingsValue = null | boolean | number | string | SettingsValue[] | { [key: string]: SettingsValue }

/** One section: the mapping stored under a namespace. */
export type SettingsRecord = { [key: string]: SettingsValue }

/**
 * A partial update of one section. A plain object merges key by key (recursively); `undefined`
 * deletes the key; any other value (scalars, arrays, `null`) replaces what was there.
 */
export type SettingsPatch = { [key: string]: SettingsValue | SettingsPatch | undefined }

/** Namespaces are plugin names: a letter first, then letters, digits, `-` or `_`. */
export const NAMESPACE_PATTERN = /^[A-Za-z][A-Za-z0-9_-]*$/

export function checkNamespace(namespace: unknown): asserts namespace is string {
  if (typeof namespace !== 'string' || !NAMESPACE_PATTERN.test(namespace)) {
    throw new TypeError(
      `invalid settings namespace ${JSON.stringify(namespace)}: use a letter, then letters, digits, "-" or "_"`,
    )
  }
}

export function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return false
  const proto = Object.getPrototypeOf(value)
  return proto === Object.prototype || proto === null
}

/** Throws a TypeError naming the path of the first value a settings document cannot hold. */
export function checkValue(value: unknown, path: string, allowUndefined = false): void {
  if (value === undefined) {
    if (allowUndefined) return
    throw new TypeError(`settings value at ${path} is undefined (only patches may use undefined, to delete a key)`)
  }
  if (value === null || typeof value === 'boolean' || typeof value === 'string') return
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) throw new TypeError(`settings value at ${path} is not a finite number`)
    return
  }
  if (Array.isArray(value)) {
    value.forEach((item, index) => {
      checkValue(item, `${path}[${index}]`)
    })
    return
  }
  if (isPlainObject(value)) {
    for (const [key, item] of Object.entries(value)) checkValue(item, `${path}.${key}`, allowUndefined)
    return
  }
  throw new TypeError(
    `settings value at ${path} is a ${typeof value === 'object' ? 'non-plain object' : typeof value}; use JSON-like data`,
  )
}

export function checkPatch(namespace: string, patch: unknown): asserts patch is SettingsPatch {
  if (!isPlainObject(patch)) throw new TypeError(`settings patch for "${namespace}" must be a plain object`)
  checkValue(patch, namespace, true)
}

/** `section` with `patch` applied, as a new object; the inputs are not modified. */
export function mergePatch(section: unknown, patch: SettingsPatch): SettingsRecord {
  const base: Record<string, unknown> = isPlainObject(section) ? { ...section } : {}
  for (const [key, value] of Object.entries(patch)) {
    if (value === undefined) delete base[key]
    else if (isPlainObject(value)) base[key] = mergePatch(base[key], value as SettingsPatch)
    else base[key] = structuredClone(value)
  }
  return base as SettingsRecord
}

/** Structural equality over settings values (key order ignored). */
export function sameValue(a: unknown, b: unknown): boolean {
  if (a === b) return true
  if (Array.isArray(a)) return Array.isArray(b) && a.length === b.length && a.every((item, i) => sameValue(item, b[i]))
  if (isPlainObject(a) && isPlainObject(b)) {
    const keys = Object.keys(a)
    if (keys.length !== Object.keys(b).length) return false
    return keys.every((key) => Object.hasOwn(b, key) && sameValue(a[key], b[key]))
  }
  return false
}

/** Freezes a settings value in place, recursively, and returns it. */
export function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === 'object' && !Object.isFrozen(value)) {
    Object.freeze(value)
    for (const item of Object.values(value)) deepFreeze(item)
  }
  return value
}
