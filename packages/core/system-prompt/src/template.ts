// `{{name}}` placeholders: parsing at registration, substitution at assembly.

export const VARIABLE_NAME_PATTERN = /^[A-Za-z_][A-Za-z0-9_.-]*$/
const PLACEHOLDER = /\{\{\s*([A-Za-z_][A-Za-z0-9_.-]*)\s*\}\}/g

/** Variable names a text refers to, in first-use order, without duplicates. */
export function placeholders(text: string): string[] {
  const names = new Set<string>()
  for (const match of text.matchAll(PLACEHOLDER)) names.add(match[1])
  return [...names]
}

/** Replaces every placeholder with `lookup(name)`. */
export function render(text: string, lookup: (name: string) => string): string {
  return text.replace(PLACEHOLDER, (_whole, name: string) => lookup(name))
}

/** Strips blank lines around a part so parts join with exactly one empty line between them. */
export function tidy(text: string): string {
  return text.replace(/^(?:[ \t]*\n)+/, '').replace(/\s+$/, '')
}
