// The settings document as a `yaml` Document: parse with located errors, comment-preserving edits.
import { createRequire } from 'node:module'
import type * as Yaml from 'yaml'
import type { Document, Node } from 'yaml'

// Loaded on first use: a home without this file never pays for loading the YAML parser.
let yamlModule: typeof Yaml | undefined
const yaml = (): typeof Yaml => (yamlModule ??= createRequire(import.meta.url)('yaml') as typeof Yaml)
import { isPlainObject, type SettingsPatch, type SettingsRecord } from '@dsh/settings'

export interface DocumentProblem {
  line?: number
  column?: number
  message: string
}

/** `yaml` appends " at line N, column M:" plus a source excerpt; we report the place separately. */
function firstLine(message: string): string {
  return message
    .split('\n')[0]
    .replace(/ at line \d+, column \d+:?$/, '')
    .trim()
}

/** Parses `text`; an empty or comment-only text is an empty document. Returns the first problem, if any. */
export function parseSettings(text: string): { doc: Document; problem?: DocumentProblem } {
  const doc = yaml().parseDocument(text, { prettyErrors: true, uniqueKeys: true })
  const error = doc.errors[0]
  if (error) {
    const pos = error.linePos?.[0]
    return {
      doc,
      problem: { line: pos?.line, column: pos?.col, message: `${firstLine(error.message)} (${error.code})` },
    }
  }
  if (doc.contents !== null && !yaml().isMap(doc.contents)) {
    const line = doc.contents.range ? lineOf(text, doc.contents.range[0]) : undefined
    return { doc, problem: { line, message: 'the top level must be a mapping of namespace sections' } }
  }
  return { doc }
}

function lineOf(text: string, offset: number): number {
  let line = 1
  for (let i = 0; i < offset && i < text.length; i++) if (text.charCodeAt(i) === 10) line++
  return line
}

/** The document as plain data: namespace -> section. */
export function documentData(doc: Document): Record<string, unknown> {
  const data: unknown = doc.toJS({ maxAliasCount: 1000 })
  return isPlainObject(data) ? data : {}
}

/** Replaces the node at `path`, carrying over the comments attached to the node it replaces. */
function setNode(doc: Document, path: string[], value: unknown): void {
  const old = doc.getIn(path, true)
  const node = doc.createNode(value) as Node
  if (yaml().isNode(old)) {
    node.comment = old.comment
    node.commentBefore = old.commentBefore
    node.spaceBefore = old.spaceBefore
  }
  doc.setIn(path, node)
}

function ensureMap(doc: Document, path: string[]): void {
  if (path.length === 0) {
    if (!yaml().isMap(doc.contents)) doc.contents = doc.createNode({}) as never
    return
  }
  if (!yaml().isMap(doc.getIn(path, true))) setNode(doc, path, {})
}

function patchInto(doc: Document, path: string[], patch: SettingsPatch): void {
  ensureMap(doc, path)
  for (const [key, value] of Object.entries(patch)) {
    const at = [...path, key]
    if (value === undefined) doc.deleteIn(at)
    else if (isPlainObject(value)) patchInto(doc, at, value as SettingsPatch)
    else {
      const old = doc.getIn(at, true)
      // Same-typed scalar: change the value in place so its style and comments stay.
      if (
        yaml().isScalar(old) &&
        value !== null &&
        typeof value !== 'object' &&
        typeof old.value === typeof value &&
        !old.tag
      )
        old.value = value
      else setNode(doc, at, value)
    }
  }
}

/** Applies a section patch in place (comments and unrelated sections untouched). */
export function applyPatch(doc: Document, namespace: string, patch: SettingsPatch): void {
  ensureMap(doc, [])
  patchInto(doc, [namespace], patch)
}

/** Replaces or removes (`undefined`) a whole section in place. */
export function applyReplace(doc: Document, namespace: string, value: SettingsRecord | undefined): void {
  ensureMap(doc, [])
  if (value === undefined) doc.deleteIn([namespace])
  else setNode(doc, [namespace], value)
}

export function renderYaml(doc: Document): string {
  return doc.toString({ flowCollectionPadding: false, lineWidth: 0 })
}

/**
 * The 1-based line of the deepest key along `path` that the document has (the key itself when
 * present, else its closest parent's), or undefined when even the first key is absent.
 */
export function lineOfPath(text: string, doc: Document, path: readonly string[]): number | undefined {
  const y = yaml()
  let node: unknown = doc.contents
  let line: number | undefined
  for (const key of path) {
    if (y.isMap(node)) {
      const pair = node.items.find((item) => (y.isScalar(item.key) ? String(item.key.value) : String(item.key)) === key)
      if (!pair) break
      const range =
        (y.isNode(pair.key) ? pair.key.range : undefined) ?? (y.isNode(pair.value) ? pair.value.range : undefined)
      if (range) line = lineOf(text, range[0])
      node = pair.value
    } else if (y.isSeq(node)) {
      const item = node.items[Number(key)]
      if (!y.isNode(item)) break
      if (item.range) line = lineOf(text, item.range[0])
      node = item
    } else break
  }
  return line
}
