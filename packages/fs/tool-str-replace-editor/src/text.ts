// Line arithmetic for the editor: numbering, exact replacement with line spans, insertion after a line.

export class EditorError extends Error {
  override name = 'EditorError'
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message)
  }
}

/** Lines of a text; a final newline does not open another line. CR of CRLF stays on the line. */
export function linesOf(text: string): string[] {
  if (text === '') return []
  const parts = text.split('\n')
  if (parts.at(-1) === '') parts.pop()
  return parts
}

/** 1-based line of character index `index`. */
export function lineAt(text: string, index: number): number {
  let line = 1
  for (let at = text.indexOf('\n'); at !== -1 && at < index; at = text.indexOf('\n', at + 1)) line++
  return line
}

function positions(haystack: string, needle: string): number[] {
  const found: number[] = []
  for (let at = haystack.indexOf(needle); at !== -1; at = haystack.indexOf(needle, at + needle.length)) found.push(at)
  return found
}

export interface Replaced {
  after: string
  /** 1-based line span of the new text in `after`. */
  firstLine: number
  lastLine: number
}

/** Replaces the single occurrence of `oldStr`; throws EditorError for none or several (naming their lines). */
export function replaceOnce(text: string, oldStr: string, newStr: string, path: string): Replaced {
  let search = oldStr
  let insert = newStr
  let found = positions(text, search)
  if (found.length === 0 && text.includes('\r\n') && oldStr.includes('\n') && !oldStr.includes('\r\n')) {
    search = oldStr.replaceAll('\n', '\r\n')
    insert = newStr.replaceAll('\r\n', '\n').replaceAll('\n', '\r\n')
    found = positions(text, search)
  }
  if (found.length === 0) {
    throw new EditorError(
      'NO_MATCH',
      `old_str was not found in ${path}. It must match the file exactly, including whitespace and indentation, and must not include ` +
        'the line numbers shown by view. View the file again and copy the exact text.',
    )
  }
  if (found.length > 1) {
    const lines = found.slice(0, 10).map((at) => lineAt(text, at))
    throw new EditorError(
      'MULTIPLE_MATCHES',
      `old_str occurs ${found.length} times in ${path} (starting on lines ${lines.join(', ')}${found.length > 10 ? ', ...' : ''}), so the replacement is ambiguous. ` +
        'Include more surrounding lines in old_str so that it matches exactly one place.',
    )
  }
  const at = found[0]
  const after = text.slice(0, at) + insert + text.slice(at + search.length)
  const firstLine = lineAt(after, at)
  const span = insert.endsWith('\n') ? insert.slice(0, -1) : insert
  return { after, firstLine, lastLine: firstLine + (span.match(/\n/g)?.length ?? 0) }
}

/** Inserts `newStr` as whole lines after line `afterLine` (0: at the top). */
export function insertAfter(text: string, afterLine: number, newStr: string, path: string): Replaced {
  const total = linesOf(text).length
  if (!Number.isInteger(afterLine) || afterLine < 0 || afterLine > total) {
    throw new EditorError(
      'INVALID_LINE',
      `insert_line ${afterLine} is outside ${path}, which has ${total} line${total === 1 ? '' : 's'}. Use a value from 0 (top of the file) to ${total} (after the last line).`,
    )
  }
  const eol = text.includes('\r\n') ? '\r\n' : '\n'
  let insert = eol === '\r\n' ? newStr.replaceAll('\r\n', '\n').replaceAll('\n', '\r\n') : newStr
  // Every line before the last one ends with a newline, so the loop only runs where one exists.
  let offset = afterLine === total ? text.length : 0
  if (afterLine < total) for (let i = 0; i < afterLine; i++) offset = text.indexOf('\n', offset) + 1
  let before = text.slice(0, offset)
  const rest = text.slice(offset)
  if (afterLine === total && text !== '' && !text.endsWith('\n')) {
    // The last line has no newline: give it one, and keep the file without a final newline.
    before += eol
    if (insert.endsWith(eol)) insert = insert.slice(0, -eol.length)
  } else if (!insert.endsWith('\n')) insert += eol
  const after = before + insert + rest
  const firstLine = afterLine + 1
  return { after, firstLine, lastLine: firstLine + Math.max(0, linesOf(insert).length - 1) }
}

/** `cat -n`-style numbering of lines `first..last` (1-based, inclusive), long lines cut at `maxLineLength`. */
export function numbered(
  lines: string[],
  first: number,
  last: number,
  maxLineLength: number,
  maxBytes = Infinity,
): { text: string; last: number; cut: number } {
  const out: string[] = []
  let bytes = 0
  let cut = 0
  let shown = first - 1
  for (let n = first; n <= last; n++) {
    let line = lines[n - 1].replace(/\r$/, '')
    if (line.length > maxLineLength) {
      line = `${line.slice(0, maxLineLength)} [... line cut: ${line.length - maxLineLength} more characters]`
      cut++
    }
    const row = `${String(n).padStart(6)}\t${line}`
    bytes += Buffer.byteLength(row) + 1
    if (bytes > maxBytes && out.length > 0) break
    out.push(row)
    shown = n
  }
  return { text: out.join('\n'), last: shown, cut }
}
