// Near matches of a mistyped tool name, for the loader's error: names within a small edit distance,
// or that contain the typed name (or are contained in it), best first.

/** Levenshtein distance, case-insensitive. */
function distance(a: string, b: string): number {
  const x = a.toLowerCase()
  const y = b.toLowerCase()
  let previous = Array.from({ length: y.length + 1 }, (_, j) => j)
  for (let i = 1; i <= x.length; i++) {
    const current = [i]
    for (let j = 1; j <= y.length; j++) {
      const cost = x[i - 1] === y[j - 1] ? 0 : 1
      current.push(Math.min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + cost))
    }
    previous = current
  }
  return previous[y.length]
}

/** At most `limit` of `candidates` close to `typed`, closest first (ties by name). */
export function nearMatches(typed: string, candidates: readonly string[], limit = 3): string[] {
  const lower = typed.toLowerCase()
  const budget = Math.max(2, Math.floor(typed.length / 3))
  const scored: Array<{ name: string; score: number }> = []
  for (const name of candidates) {
    const other = name.toLowerCase()
    const d = distance(lower, other)
    const contains = lower.length >= 3 && (other.includes(lower) || lower.includes(other))
    if (d <= budget || contains) scored.push({ name, score: contains ? Math.min(d, 1) : d })
  }
  scored.sort((a, b) => a.score - b.score || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
  return scored.slice(0, limit).map((s) => s.name)
}
