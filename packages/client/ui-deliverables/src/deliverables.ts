// The files a turn produced, from the session log: every successful write / edit /
// str_replace_editor call of the turn, grouped by path, each change with what a diff needs.
// Pure, browser-safe.

export interface FileChange {
  /** seq of the tool/call event. */
  seq: number
  tool: string
  kind: 'create' | 'edit'
  before?: string
  after: string
}

export interface Deliverable {
  path: string
  changes: FileChange[]
  added: number
  removed: number
}

/** Lines of a text (a final newline ends the last line, it does not start another). */
const split = (s: string) => (s.endsWith('\n') ? s.slice(0, -1) : s).split('\n')
const lines = (s: string | undefined) => (s ? split(s).length : 0)

function changeOf(
  seq: number,
  tool: string,
  args: Record<string, unknown>,
): { path: string; change: FileChange } | undefined {
  const str = (k: string) => (typeof args[k] === 'string' ? (args[k] as string) : undefined)
  if (tool === 'write' && str('file_path') !== undefined)
    return { path: str('file_path')!, change: { seq, tool, kind: 'create', after: str('content') ?? '' } }
  if (tool === 'edit' && str('file_path') !== undefined)
    return {
      path: str('file_path')!,
      change: { seq, tool, kind: 'edit', before: str('old_string') ?? '', after: str('new_string') ?? '' },
    }
  if (tool === 'str_replace_editor' && str('path') !== undefined) {
    const command = str('command')
    if (command === 'create')
      return { path: str('path')!, change: { seq, tool, kind: 'create', after: str('file_text') ?? '' } }
    if (command === 'str_replace')
      return {
        path: str('path')!,
        change: { seq, tool, kind: 'edit', before: str('old_str') ?? '', after: str('new_str') ?? '' },
      }
    if (command === 'insert')
      return { path: str('path')!, change: { seq, tool, kind: 'edit', before: '', after: str('new_str') ?? '' } }
  }
  return undefined
}

/** Files changed by the last turn that has started (successful calls only), in first-change order. */
export function lastTurnDeliverables(events: ReadonlyArray<{ seq: number; type: string; data: unknown }>): {
  turn?: number
  files: Deliverable[]
} {
  let turn: number | undefined
  let pending = new Map<string, { path: string; change: FileChange }>()
  let files = new Map<string, Deliverable>()
  for (const e of events) {
    const d = e.data as Record<string, any>
    if (e.type === 'turn/start') {
      turn = d.turn
      pending = new Map()
      files = new Map()
    } else if (e.type === 'tool/call') {
      let args: Record<string, unknown> = {}
      try {
        args = JSON.parse(d.arguments) as Record<string, unknown>
      } catch {
        continue
      }
      const found = changeOf(e.seq, d.name, args ?? {})
      if (found) pending.set(d.callId, found)
    } else if (e.type === 'tool/result') {
      const found = pending.get(d.message?.callId)
      if (!found) continue
      pending.delete(d.message.callId)
      if (d.message.isError || d.error) continue
      const file = files.get(found.path) ?? { path: found.path, changes: [], added: 0, removed: 0 }
      file.changes.push(found.change)
      file.added += lines(found.change.after)
      file.removed += lines(found.change.before)
      files.set(found.path, file)
    }
  }
  return { ...(turn !== undefined ? { turn } : {}), files: [...files.values()] }
}

/** A unified-style listing of one change: removed lines with "-", added lines with "+". */
export function diffLines(change: FileChange): string[] {
  const before = change.before ? split(change.before).map((l) => `-${l}`) : []
  return [...before, ...(change.after ? split(change.after).map((l) => `+${l}`) : [])]
}
