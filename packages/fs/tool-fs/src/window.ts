// Read windowing: a line-numbered slice of a text file with per-line and total size caps.

export interface WindowOptions {
  /** 1-based first line. */
  offset: number
  limit: number
  maxLineLength: number
  maxOutputBytes: number
}

export type WindowResult =
  | { ok: true; text: string; totalLines: number; first: number; last: number; truncatedLines: number }
  | { ok: false; totalLines: number }

export function splitLines(text: string): string[] {
  if (text === '') return []
  const lines = text.split('\n')
  if (lines[lines.length - 1] === '') lines.pop()
  return lines
}

/** Line-numbered view like `cat -n`: the number right-aligned in six columns, a tab, the line. */
export function renderWindow(text: string, options: WindowOptions): WindowResult {
  const lines = splitLines(text)
  const totalLines = lines.length
  if (totalLines === 0) return { ok: true, text: '', totalLines, first: 0, last: 0, truncatedLines: 0 }
  if (options.offset > totalLines) return { ok: false, totalLines }
  const first = options.offset
  const end = Math.min(totalLines, first - 1 + options.limit)
  const out: string[] = []
  let bytes = 0
  let truncatedLines = 0
  let last = first - 1
  for (let n = first; n <= end; n++) {
    let line = lines[n - 1]
    if (line.endsWith('\r')) line = line.slice(0, -1)
    if (line.length > options.maxLineLength) {
      line = `${line.slice(0, options.maxLineLength)} … [line truncated: ${line.length} characters in total]`
      truncatedLines++
    }
    const rendered = `${String(n).padStart(6, ' ')}\t${line}`
    const size = Buffer.byteLength(rendered) + 1
    if (bytes + size > options.maxOutputBytes && out.length > 0) break
    out.push(rendered)
    bytes += size
    last = n
  }
  return { ok: true, text: out.join('\n'), totalLines, first, last, truncatedLines }
}
