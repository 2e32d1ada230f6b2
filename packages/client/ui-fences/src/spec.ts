// The dsh-ui fence language (browser-safe): a fenced block tagged `dsh-ui` holds one JSON object
// describing a component. `parseSpec` checks it and names the first thing wrong in one line.

export type Spec =
  | { type: 'panel'; title?: string; body: string; tone: 'info' | 'warning' | 'success' }
  | { type: 'table'; title?: string; columns: string[]; rows: string[][] }
  | { type: 'chart'; title?: string; data: Array<{ label: string; value: number }> }
  | { type: 'form'; title?: string; fields: Field[]; submit: string }

export interface Field {
  name: string
  label: string
  kind: 'text' | 'select' | 'checkbox'
  options?: string[]
}

export const FENCE_LANGUAGE = 'dsh-ui'
const LIMIT = 200

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v)
const text = (v: unknown): v is string => typeof v === 'string'
const cell = (v: unknown): string =>
  typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean' ? String(v) : ''

/** The component a fence describes, or `{error}` naming what is wrong. */
export function parseSpec(source: string): Spec | { error: string } {
  let value: unknown
  try {
    value = JSON.parse(source)
  } catch (error) {
    return { error: `not JSON: ${(error as Error).message}` }
  }
  if (!isObject(value)) return { error: 'expected one JSON object' }
  const title = text(value.title) ? { title: value.title } : {}
  switch (value.type) {
    case 'panel': {
      if (!text(value.body)) return { error: 'panel: body must be a string' }
      const tone = value.tone === 'warning' || value.tone === 'success' ? value.tone : 'info'
      return { type: 'panel', ...title, body: value.body, tone }
    }
    case 'table': {
      if (!Array.isArray(value.columns) || !value.columns.every(text))
        return { error: 'table: columns must be strings' }
      if (!Array.isArray(value.rows) || !value.rows.every(Array.isArray)) return { error: 'table: rows must be arrays' }
      return {
        type: 'table',
        ...title,
        columns: value.columns as string[],
        rows: (value.rows as unknown[][]).slice(0, LIMIT).map((row) => row.map(cell)),
      }
    }
    case 'chart': {
      if (!Array.isArray(value.data)) return { error: 'chart: data must be an array of {label, value}' }
      const data: Array<{ label: string; value: number }> = []
      for (const [i, point] of value.data.slice(0, LIMIT).entries()) {
        if (!isObject(point) || !text(point.label) || typeof point.value !== 'number' || !Number.isFinite(point.value))
          return { error: `chart: data[${i}] must be {label: string, value: number}` }
        data.push({ label: point.label, value: point.value })
      }
      return { type: 'chart', ...title, data }
    }
    case 'form': {
      if (!Array.isArray(value.fields) || value.fields.length === 0)
        return { error: 'form: fields must be a non-empty array' }
      const fields: Field[] = []
      for (const [i, f] of value.fields.slice(0, 20).entries()) {
        if (!isObject(f) || !text(f.name) || f.name === '') return { error: `form: fields[${i}].name must be a string` }
        const kind = f.kind === 'select' || f.kind === 'checkbox' ? f.kind : 'text'
        const options = Array.isArray(f.options) ? f.options.filter(text) : undefined
        if (kind === 'select' && !options?.length) return { error: `form: fields[${i}] is a select without options` }
        fields.push({ name: f.name, label: text(f.label) ? f.label : f.name, kind, ...(options ? { options } : {}) })
      }
      return { type: 'form', ...title, fields, submit: text(value.submit) ? value.submit : 'Send' }
    }
    default:
      return { error: `unknown type ${JSON.stringify(value.type)} (panel, table, chart, form)` }
  }
}

/** The user message a submitted form sends: its title, then one `label: value` line per field. */
export function formMessage(spec: Extract<Spec, { type: 'form' }>, values: Record<string, string | boolean>): string {
  const lines = spec.fields.map((f) => {
    const v = values[f.name]
    return `${f.label}: ${f.kind === 'checkbox' ? (v ? 'yes' : 'no') : String(v ?? '')}`
  })
  return [`Form${spec.title ? ` "${spec.title}"` : ''} submitted:`, ...lines].join('\n')
}

/** The system prompt section that teaches the model the fences (web sessions only). */
export const PROMPT = `Rich answers (this conversation is shown in a browser): besides Markdown you may put a fenced block tagged \`${FENCE_LANGUAGE}\` holding one JSON object, rendered as a component:
- {"type":"table","title":"...","columns":["A","B"],"rows":[["1","2"]]}
- {"type":"chart","title":"...","data":[{"label":"x","value":3}]} (a bar chart)
- {"type":"panel","title":"...","body":"text","tone":"info|warning|success"}
- {"type":"form","title":"...","fields":[{"name":"n","label":"Name","kind":"text|select|checkbox","options":["a"]}],"submit":"Send"} (the user's answers come back as their next message)
Use them only when they help the user more than plain text.`
