// Head/tail preview of a long text, cut on line boundaries where one is near and never inside a
// UTF-8 sequence, with the line span of what was left out.

export interface PreviewOptions {
  headBytes: number
  tailBytes: number
}

export interface Preview {
  head: string
  tail: string
  totalBytes: number
  totalLines: number
  omittedBytes: number
  /** 1-based lines that are wholly or partly missing from the preview. */
  firstOmittedLine: number
  lastOmittedLine: number
}

const NL = 0x0a

function isContinuation(byte: number | undefined): boolean {
  return byte !== undefined && (byte & 0xc0) === 0x80
}

function countNewlines(bytes: Uint8Array, start: number, end: number): number {
  let count = 0
  for (let at = bytes.indexOf(NL, start); at !== -1 && at < end; at = bytes.indexOf(NL, at + 1)) count++
  return count
}

/** Lines of a text the way an editor counts them: a final newline does not open a new line. */
export function lineCount(bytes: Uint8Array): number {
  if (bytes.length === 0) return 0
  return countNewlines(bytes, 0, bytes.length) + (bytes[bytes.length - 1] === NL ? 0 : 1)
}

/** Returns undefined when the text fits in `headBytes + tailBytes` and needs no cut. */
export function preview(text: string, options: PreviewOptions): Preview | undefined {
  const bytes = Buffer.from(text, 'utf8')
  const total = bytes.length
  if (total <= options.headBytes + options.tailBytes) return undefined

  let headEnd = options.headBytes
  const lastNl = bytes.lastIndexOf(NL, headEnd - 1)
  if (lastNl >= headEnd / 2) headEnd = lastNl + 1
  else while (headEnd > 0 && isContinuation(bytes[headEnd])) headEnd--

  let tailStart = total - options.tailBytes
  const nextNl = bytes.indexOf(NL, tailStart - 1)
  if (nextNl !== -1 && nextNl + 1 <= tailStart + options.tailBytes / 2 && nextNl + 1 < total) tailStart = nextNl + 1
  else while (tailStart < total && isContinuation(bytes[tailStart])) tailStart++

  const linesBeforeTail = countNewlines(bytes, 0, tailStart)
  return {
    head: bytes.subarray(0, headEnd).toString('utf8'),
    tail: bytes.subarray(tailStart).toString('utf8'),
    totalBytes: total,
    totalLines: lineCount(bytes),
    omittedBytes: tailStart - headEnd,
    firstOmittedLine: countNewlines(bytes, 0, headEnd) + 1,
    // The tail begins on line linesBeforeTail + 1; when it begins mid-line that line is partly omitted too.
    lastOmittedLine: bytes[tailStart - 1] === NL ? linesBeforeTail : linesBeforeTail + 1,
  }
}
