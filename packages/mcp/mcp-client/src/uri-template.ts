// RFC 6570 URI templates as MCP resource templates use them (`notes://day/{day}`,
// `file:///{+path}`, `search://q{?query,limit}`): the variables a template names and the URI it
// expands to with one string value per variable. Browser-safe, no dependencies. Values are
// strings (no lists or maps); a `:N` prefix modifier is honoured, `*` is read as a plain value.

interface Operator {
  first: string
  sep: string
  named: boolean
  ifEmpty: string
  reserved: boolean
}

const OPERATORS: Record<string, Operator> = {
  '': { first: '', sep: ',', named: false, ifEmpty: '', reserved: false },
  '+': { first: '', sep: ',', named: false, ifEmpty: '', reserved: true },
  '#': { first: '#', sep: ',', named: false, ifEmpty: '', reserved: true },
  '.': { first: '.', sep: '.', named: false, ifEmpty: '', reserved: false },
  '/': { first: '/', sep: '/', named: false, ifEmpty: '', reserved: false },
  ';': { first: ';', sep: ';', named: true, ifEmpty: '', reserved: false },
  '?': { first: '?', sep: '&', named: true, ifEmpty: '=', reserved: false },
  '&': { first: '&', sep: '&', named: true, ifEmpty: '=', reserved: false },
}

const EXPRESSION = /\{([+#./;?&]?)([^{}]*)\}/g

interface VarSpec {
  name: string
  prefix?: number
}

function parseVars(list: string): VarSpec[] {
  return list
    .split(',')
    .map((raw) => raw.trim())
    .filter(Boolean)
    .map((raw) => {
      const name = raw.replace(/\*$/, '')
      const colon = name.indexOf(':')
      if (colon < 0) return { name }
      const prefix = Number(name.slice(colon + 1))
      return Number.isInteger(prefix) && prefix > 0
        ? { name: name.slice(0, colon), prefix }
        : { name: name.slice(0, colon) }
    })
}

/** The variable names of `template`, in order of first appearance, without duplicates. */
export function templateVariables(template: string): string[] {
  const out: string[] = []
  for (const match of template.matchAll(EXPRESSION))
    for (const spec of parseVars(match[2])) if (!out.includes(spec.name)) out.push(spec.name)
  return out
}

/** Percent-encodes what a URI must not carry literally; reserved characters stay with `+` and `#`. */
function encode(value: string, reserved: boolean): string {
  if (reserved) return encodeURI(value).replace(/%25([0-9A-Fa-f]{2})/g, '%$1')
  return encodeURIComponent(value).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`)
}

/** `template` with every expression expanded from `values` (a missing variable is left out, as RFC 6570 says). */
export function expandTemplate(template: string, values: Readonly<Record<string, string>>): string {
  return template.replace(EXPRESSION, (_all, op: string, list: string) => {
    const operator = OPERATORS[op] ?? OPERATORS['']
    const parts: string[] = []
    for (const spec of parseVars(list)) {
      const raw = values[spec.name]
      if (raw === undefined) continue
      const value = encode(spec.prefix ? [...raw].slice(0, spec.prefix).join('') : raw, operator.reserved)
      parts.push(operator.named ? `${spec.name}${value === '' ? operator.ifEmpty : `=${value}`}` : value)
    }
    return parts.length ? operator.first + parts.join(operator.sep) : ''
  })
}

/**
 * The first variable of `template` whose value in `values` is missing or blank, or undefined when
 * every one has a value (a blank one would name a different resource, or none).
 */
export function firstEmptyVariable(template: string, values: Readonly<Record<string, string>>): string | undefined {
  return templateVariables(template).find((name) => !(values[name] ?? '').trim())
}
