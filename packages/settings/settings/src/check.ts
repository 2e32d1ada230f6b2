// The start check of a settings document: every section must belong to a plugin (or to a package
// of the installation that declares it), every claimed section must pass its schema, and no key
// of an object section may be unknown. Each problem is one line naming the key, the bad value,
// the valid ones and, for a near miss, the likely intended name.
import type { SectionSchema } from './service.ts'

export interface SettingsProblem {
  /** Namespace, then the keys down to the offending one. */
  path: string[]
  /** What is wrong, without the place (the caller adds file and line). */
  message: string
  /** 1-based line in the settings file, when the provider can locate the key. */
  line?: number
}

/** Damerau-Levenshtein (optimal string alignment) distance, case-insensitive. */
export function editDistance(a: string, b: string): number {
  a = a.toLowerCase()
  b = b.toLowerCase()
  const d: number[][] = Array.from({ length: a.length + 1 }, (_, i) => [i, ...Array<number>(b.length).fill(0)])
  for (let j = 1; j <= b.length; j++) d[0][j] = j
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1
      d[i][j] = Math.min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost)
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1])
        d[i][j] = Math.min(d[i][j], d[i - 2][j - 2] + 1)
    }
  }
  return d[a.length][b.length]
}

/** The candidate `word` most likely stands for (a typo, a case slip, a prefix), or undefined. */
export function didYouMean(word: string, candidates: Iterable<string>): string | undefined {
  let best: string | undefined
  let bestDistance = Infinity
  const limit = Math.max(1, Math.min(3, Math.floor(word.length / 3)))
  for (const candidate of candidates) {
    if (candidate === word) continue
    const distance = editDistance(word, candidate)
    const close = distance <= limit || (word.length >= 3 && candidate.toLowerCase().startsWith(word.toLowerCase()))
    if (close && distance < bestDistance) {
      best = candidate
      bestDistance = distance
    }
  }
  return best
}

// The parts of a schemastery schema the check walks (its runtime shape, not exported as types).
interface SchemaShape {
  type?: string
  dict?: Record<string, SchemaShape>
  list?: SchemaShape[]
  inner?: SchemaShape
  value?: unknown
}

const shape = (schema: unknown): SchemaShape | undefined =>
  typeof schema === 'function' ? (schema as SchemaShape) : undefined

function isPlainRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

/** The sub-schema at `path`, following object fields, dict values and array items. */
function schemaAt(schema: SchemaShape | undefined, path: readonly string[]): SchemaShape | undefined {
  let node = schema
  for (const key of path) {
    if (!node) return undefined
    if (node.type === 'object') node = node.dict?.[key]
    else if (node.type === 'dict' || node.type === 'array' || node.type === 'tuple') node = node.inner
    else return undefined
  }
  return node
}

/** The constants a value may take at this schema (an enum written as a union of constants), if it is one. */
function constantsOf(schema: SchemaShape | undefined): unknown[] | undefined {
  if (!schema) return undefined
  if (schema.type === 'const') return [schema.value]
  if (schema.type !== 'union' || !schema.list?.length) return undefined
  const values: unknown[] = []
  for (const member of schema.list) {
    const inner = constantsOf(member)
    if (!inner) return undefined
    values.push(...inner)
  }
  return values
}

function valueAt(raw: unknown, path: readonly string[]): unknown {
  let node = raw
  for (const key of path)
    node = isPlainRecord(node) || Array.isArray(node) ? (node as Record<string, unknown>)[key] : undefined
  return node
}

const show = (value: unknown): string => {
  const text = JSON.stringify(value)
  return text === undefined ? String(value) : text.length > 60 ? `${text.slice(0, 57)}...` : text
}

/** Unknown keys of object schemas, depth first (dicts and arrays are walked, unions are not). */
function unknownKeys(schema: SchemaShape | undefined, raw: unknown, path: string[], out: SettingsProblem[]): void {
  if (!schema || !isPlainRecord(raw)) return
  if (schema.type === 'object' && schema.dict) {
    const fields = Object.keys(schema.dict)
    for (const [key, value] of Object.entries(raw)) {
      const field = schema.dict[key]
      if (!field) {
        const guess = didYouMean(key, fields)
        out.push({
          path: [...path, key],
          message: `unknown key${guess ? ` (did you mean "${guess}"?)` : ''}; valid keys: ${fields.join(', ') || '(none)'}`,
        })
      } else unknownKeys(field, value, [...path, key], out)
    }
  } else if (schema.type === 'dict') {
    for (const [key, value] of Object.entries(raw)) unknownKeys(schema.inner, value, [...path, key], out)
  }
}

/**
 * Checks one stored section against its schema. An invalid value yields one problem (the first
 * the schema reports); a valid section may still yield one per unknown key of its object parts.
 */
export function checkSection(namespace: string, schema: SectionSchema<unknown>, raw: unknown): SettingsProblem[] {
  try {
    schema(raw)
  } catch (error) {
    const errorPath = (error as { options?: { path?: unknown } } | null)?.options?.path
    const path = Array.isArray(errorPath) ? errorPath.map(String) : []
    const value = valueAt(raw, path)
    const reason = (error instanceof Error ? error.message : String(error)).replace(/^\$(\.[^\s]*)?\s+/, '')
    const constants = constantsOf(schemaAt(shape(schema), path))
    let message: string
    if (constants) {
      const guess =
        typeof value === 'string'
          ? didYouMean(
              value,
              constants.filter((c): c is string => typeof c === 'string'),
            )
          : undefined
      message = `${show(value)} is not valid (valid: ${constants.map(show).join(', ')}${guess ? `; did you mean ${show(guess)}?` : ''})`
    } else {
      const expected = /^expected (.*) but got /.exec(reason)?.[1]
      message = expected
        ? `${show(value)} is not valid (expected ${expected})`
        : `${show(value)} is not valid (${reason})`
    }
    return [{ path: [namespace, ...path], message }]
  }
  const out: SettingsProblem[] = []
  unknownKeys(shape(schema), raw, [namespace], out)
  return out
}

/** A section no loaded plugin reads and no installed package declares. */
export function unknownSection(namespace: string, known: readonly string[]): SettingsProblem {
  const guess = didYouMean(namespace, known)
  const list = known.length ? `; known sections: ${[...known].sort().join(', ')}` : ''
  return { path: [namespace], message: `unknown section${guess ? ` (did you mean "${guess}"?)` : ''}${list}` }
}

/** `<file>:<line>: a.b.c: message` */
export function formatProblem(location: string, problem: SettingsProblem): string {
  return `${location}${problem.line ? `:${problem.line}` : ''}: ${problem.path.join('.')}: ${problem.message}`
}
