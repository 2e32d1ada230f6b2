// The model-visible messages, and reading the plugin's earlier messages back out of the log.
// One message per instruction file; its source label is the file's path, its text is a header
// line followed (for loaded or changed files) by the body the model saw.
import type { AnySessionEvent, SessionEvent } from '@dsh/session'

export type Scope = 'user' | 'project' | 'nested'

export interface Rendered {
  path: string
  text: string
  /** What change detection compares: the text after the header line; undefined for a removal. */
  body: string | undefined
}

const SCOPE: Record<Scope, string> = {
  user: 'user-global instructions, apply to every project',
  project: 'project instructions',
  nested: 'nested instructions, apply to files under this directory',
}

export function renderBody(text: string, size: number, shownBytes: number, path: string): string {
  if (shownBytes >= size) return text
  return `${text}\n\n[truncated: showing the first ${shownBytes} of ${size} bytes of ${path}; read the file for the rest]`
}

export function renderLoaded(path: string, scope: Scope, body: string): Rendered {
  return { path, body, text: `Instructions from ${path} (${SCOPE[scope]}):\n${body}` }
}

export function renderChanged(path: string, body: string): Rendered {
  return { path, body, text: `Instructions from ${path} changed; this version replaces the earlier one:\n${body}` }
}

export function renderRemoved(path: string): Rendered {
  return {
    path,
    body: undefined,
    text: `Instructions file ${path} was removed; its earlier instructions no longer apply.`,
  }
}

export function renderOmitted(path: string, size: number, budget: number): string {
  return `[omitted: the ${budget}-byte budget for instructions loaded at session start is used up; read ${path} (${size} bytes) directly]`
}

/** Body of an earlier message of ours: text after the first newline; undefined for a removal notice. */
export function bodyOf(text: string): string | undefined {
  const newline = text.indexOf('\n')
  return newline < 0 ? undefined : text.slice(newline + 1)
}

/** `{path, text}` when `event` is a `user/message` of `plugin` labelled with a path. */
export function messageOf(event: AnySessionEvent, plugin: string): { path: string; text: string } | undefined {
  if (event.type !== 'user/message') return undefined
  const { data } = event as SessionEvent<'user/message'>
  const source = data.source
  if (source.kind !== 'plugin' || source.plugin !== plugin || !source.label) return undefined
  return { path: source.label, text: data.content.map((b) => (b.type === 'text' ? b.text : '')).join('') }
}
