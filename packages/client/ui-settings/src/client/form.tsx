// A form generated from a schemastery schema (rebuilt from its JSON): text, number, switch and
// choice fields, nested objects as fieldsets, anything else (lists, dicts, mixed unions) as JSON.
// `check` runs the schema in the page so a bad value is named before anything is sent.
import { type ReactElement, useState } from 'react'
import type Schema from 'schemastery'
import type { Translate } from '@dsh/client-runtime'

export interface SchemaNode {
  type: string
  dict?: Record<string, SchemaNode>
  list?: SchemaNode[]
  inner?: SchemaNode
  value?: unknown
  meta?: {
    default?: unknown
    description?: unknown
    role?: string
    required?: boolean
    min?: number
    max?: number
    step?: number
  }
}

export type Json = null | boolean | number | string | Json[] | { [key: string]: Json }
type Obj = Record<string, unknown>

/** The schema's verdict on `value`: undefined, or the failing field (`config.a.b`) and why. */
export function check(schema: Schema, value: unknown): { field: string; message: string } | undefined {
  try {
    schema(structuredClone(value) as never)
    return undefined
  } catch (error) {
    const path = (error as { options?: { path?: unknown[] } }).options?.path
    const field = ['config', ...(Array.isArray(path) ? path.map(String) : [])].join('.')
    return {
      field,
      message: String((error as Error).message)
        .split('\n')[0]
        .replace(/^\$(\.[^\s]*)?\s+/, ''),
    }
  }
}

function describe(node: SchemaNode): string | undefined {
  const d = node.meta?.description
  if (typeof d === 'string') return d
  if (d && typeof d === 'object') return String((d as Record<string, unknown>).en ?? Object.values(d)[0] ?? '')
  return undefined
}

const isConstUnion = (node: SchemaNode) =>
  node.type === 'union' && !!node.list?.length && node.list.every((n) => n.type === 'const')

function setAt(value: Obj, path: string[], next: unknown): Obj {
  const out: Obj = { ...value }
  if (path.length === 1) {
    if (next === undefined) delete out[path[0]]
    else out[path[0]] = next
    return out
  }
  const inner = out[path[0]] && typeof out[path[0]] === 'object' ? (out[path[0]] as Obj) : {}
  out[path[0]] = setAt(inner, path.slice(1), next)
  return out
}

export interface FormProps {
  schema: Schema
  value: Obj
  onChange: (value: Obj) => void
  /** Paths of secret fields the row sets (their values never reach the page). */
  secretsSet: Set<string>
  invalid?: string
  t: Translate
}

export function SchemaForm({ schema, value, onChange, secretsSet, invalid, t }: FormProps) {
  const root = schema as unknown as SchemaNode
  if (root.type !== 'object' || !root.dict)
    return (
      <JsonField
        label="config"
        path={[]}
        node={root}
        value={value}
        onChange={(v) => onChange((v ?? {}) as Obj)}
        invalid={invalid}
        t={t}
      />
    )
  return (
    <Fields node={root} path={[]} value={value} onChange={onChange} secretsSet={secretsSet} invalid={invalid} t={t} />
  )
}

function Fields({
  node,
  path,
  value,
  onChange,
  secretsSet,
  invalid,
  t,
}: {
  node: SchemaNode
  path: string[]
  value: Obj
  onChange: (v: Obj) => void
  secretsSet: Set<string>
  invalid?: string
  t: Translate
}) {
  return (
    <>
      {Object.entries(node.dict ?? {}).map(([key, child]) => {
        const here = [...path, key]
        const current = value?.[key]
        const set = (next: unknown) => onChange(setAt(value ?? {}, [key], next))
        const dotted = here.join('.')
        const bad = invalid === `config.${dotted}` || undefined
        if (child.type === 'object' && child.dict) {
          return (
            <fieldset key={key} data-field={dotted}>
              <legend>{key}</legend>
              {describe(child) ? <p className="dsh-settings-muted">{describe(child)}</p> : null}
              <Fields
                node={child}
                path={here}
                value={(current ?? {}) as Obj}
                onChange={(v) => set(v)}
                secretsSet={secretsSet}
                invalid={invalid}
                t={t}
              />
            </fieldset>
          )
        }
        return (
          <Field
            key={key}
            name={key}
            path={here}
            node={child}
            value={current}
            onChange={set}
            secret={child.meta?.role === 'secret' ? secretsSet.has(dotted) : undefined}
            invalid={bad}
            t={t}
          />
        )
      })}
    </>
  )
}

function Field({
  name,
  path,
  node,
  value,
  onChange,
  secret,
  invalid,
  t,
}: {
  name: string
  path: string[]
  node: SchemaNode
  value: unknown
  onChange: (v: unknown) => void
  secret?: boolean
  invalid?: boolean
  t: Translate
}) {
  const dotted = path.join('.')
  const help = describe(node)
  const label = (
    <span>
      <code>{name}</code>
      {node.meta?.required ? ' *' : ''}
      {secret !== undefined ? (
        <span className="dsh-settings-muted"> {secret ? t('secretSet') : t('secretUnset')}</span>
      ) : null}
    </span>
  )
  let control: ReactElement
  if (node.type === 'boolean') {
    control = (
      <input type="checkbox" name={dotted} checked={value === true} onChange={(e) => onChange(e.target.checked)} />
    )
  } else if (node.type === 'number') {
    control = (
      <input
        type="number"
        name={dotted}
        value={typeof value === 'number' ? value : ''}
        step={node.meta?.step ?? 'any'}
        onChange={(e) => onChange(e.target.value === '' ? undefined : Number(e.target.value))}
      />
    )
  } else if (node.type === 'string') {
    control = (
      <input
        type={node.meta?.role === 'secret' ? 'password' : 'text'}
        autoComplete="off"
        name={dotted}
        value={typeof value === 'string' ? value : ''}
        onChange={(e) => onChange(e.target.value === '' ? undefined : e.target.value)}
      />
    )
  } else if (isConstUnion(node)) {
    const choices = node.list!.map((n) => n.value)
    control = (
      <select
        name={dotted}
        value={value === undefined ? '' : JSON.stringify(value)}
        onChange={(e) => onChange(e.target.value === '' ? undefined : JSON.parse(e.target.value))}
      >
        <option value="">—</option>
        {choices.map((c) => (
          <option key={JSON.stringify(c)} value={JSON.stringify(c)}>
            {String(c)}
          </option>
        ))}
      </select>
    )
  } else {
    return (
      <JsonField
        label={name}
        path={path}
        node={node}
        value={value}
        onChange={onChange}
        invalid={invalid ? `config.${dotted}` : undefined}
        t={t}
      />
    )
  }
  return (
    // biome-ignore lint/a11y/noLabelWithoutControl: the label does wrap its control (the input or select built above as 'control'); the rule cannot see through the variable
    <label className="dsh-field" data-field={dotted} data-invalid={invalid}>
      {label}
      {control}
      {help ? <span className="dsh-settings-muted">{help}</span> : null}
    </label>
  )
}

function JsonField({
  label,
  path,
  node,
  value,
  onChange,
  invalid,
  t,
}: {
  label: string
  path: string[]
  node: SchemaNode
  value: unknown
  onChange: (v: unknown) => void
  invalid?: string
  t: Translate
}) {
  const dotted = path.join('.')
  const [text, setText] = useState(() => (value === undefined ? '' : JSON.stringify(value, null, 2)))
  const [bad, setBad] = useState(false)
  const help = describe(node)
  return (
    <label className="dsh-field" data-field={dotted} data-invalid={bad || invalid === `config.${dotted}` || undefined}>
      <span>
        <code>{label}</code> <span className="dsh-settings-muted">JSON{bad ? ` · ${t('invalidJson')}` : ''}</span>
      </span>
      <textarea
        name={dotted || 'config'}
        value={text}
        onChange={(e) => {
          setText(e.target.value)
          if (!e.target.value.trim()) {
            setBad(false)
            onChange(undefined)
            return
          }
          try {
            onChange(JSON.parse(e.target.value) as Json)
            setBad(false)
          } catch {
            setBad(true)
          }
        }}
      />
      {help ? <span className="dsh-settings-muted">{help}</span> : null}
    </label>
  )
}
