// "Did you mean": the known name a mistyped one most likely stands for, for one-line errors about
// patch layers (a `- id:` that names no row). Optimal string alignment distance, case-insensitive;
// a candidate's leading dash-separated words count too (`permisions` -> `permission-presets`).

function distance(a: string, b: string): number {
  a = a.toLowerCase()
  b = b.toLowerCase()
  const d: number[][] = Array.from({ length: a.length + 1 }, (_, i) => [i, ...Array<number>(b.length).fill(0)])
  for (let j = 1; j <= b.length; j++) d[0][j] = j
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      d[i][j] = Math.min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1))
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1])
        d[i][j] = Math.min(d[i][j], d[i - 2][j - 2] + 1)
    }
  }
  return d[a.length][b.length]
}

/** The closest candidate within a small distance of `word` (or of a candidate's leading words), if any. */
export function nearest(word: string, candidates: Iterable<string>): string | undefined {
  const limit = Math.max(1, Math.min(3, Math.floor(word.length / 3)))
  let best: string | undefined
  let bestScore = Infinity
  for (const candidate of candidates) {
    if (candidate === word) continue
    const parts = candidate.split('-')
    const forms = parts.map((_, i) => parts.slice(0, i + 1).join('-'))
    const score = Math.min(...forms.map((form) => distance(word, form) + (form === candidate ? 0 : 0.5)))
    if (score <= limit && score < bestScore) {
      best = candidate
      bestScore = score
    }
  }
  return best
}

// The parts of a schemastery object schema the unknown-key walk reads (its runtime shape).
interface SchemaShape {
  type?: string
  dict?: Record<string, SchemaShape>
  inner?: SchemaShape
}

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' &&
  value !== null &&
  !Array.isArray(value) &&
  Object.getPrototypeOf(value) === Object.prototype

/**
 * Keys of `config` that the plugin's object schema does not name, depth first (dicts are walked,
 * unions are not), each as `config.a.b: unknown key (did you mean "x"?); valid keys: ...`.
 */
export function unknownConfigKeys(schema: unknown, config: unknown, path = 'config'): string[] {
  const node = typeof schema === 'function' ? (schema as SchemaShape) : undefined
  if (!node || !isRecord(config)) return []
  const out: string[] = []
  if (node.type === 'object' && node.dict) {
    const fields = Object.keys(node.dict)
    for (const [key, value] of Object.entries(config)) {
      const field = node.dict[key]
      if (field) out.push(...unknownConfigKeys(field, value, `${path}.${key}`))
      else {
        const guess = nearest(key, fields)
        out.push(
          `${path}.${key}: unknown key${guess ? ` (did you mean "${guess}"?)` : ''}; valid keys: ${fields.join(', ') || '(none)'}`,
        )
      }
    }
  } else if (node.type === 'dict') {
    for (const [key, value] of Object.entries(config))
      out.push(...unknownConfigKeys(node.inner, value, `${path}.${key}`))
  }
  return out
}
