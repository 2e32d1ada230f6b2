// Exact-match replacement for `edit`, run inside the provider's read-match-write critical section.

export class MatchError extends Error {
  override name = 'MatchError'
  constructor(
    readonly code: 'NO_MATCH' | 'MULTIPLE_MATCHES' | 'EMPTY_OLD_STRING',
    readonly count: number,
    message: string,
  ) {
    super(message)
  }
}

export interface Replacement {
  after: string
  count: number
  /** 1-based line span of the first replacement in the new text. */
  firstLine: number
  lastLine: number
  /** The file used CRLF line ends and the strings were converted to match. */
  crlf: boolean
}

function occurrences(haystack: string, needle: string): number {
  let count = 0
  for (let at = haystack.indexOf(needle); at !== -1; at = haystack.indexOf(needle, at + needle.length)) count++
  return count
}

function lineOf(text: string, index: number): number {
  let line = 1
  for (let at = text.indexOf('\n'); at !== -1 && at < index; at = text.indexOf('\n', at + 1)) line++
  return line
}

/** Replaces `oldString` in `text`; throws MatchError (naming the count) when it is ambiguous or absent. */
export function replaceExact(
  text: string,
  oldString: string,
  newString: string,
  replaceAll: boolean,
  path: string,
): Replacement {
  if (oldString === '') {
    if (text !== '') {
      throw new MatchError(
        'EMPTY_OLD_STRING',
        0,
        `old_string is empty but ${path} is not; give the exact text to replace, or use write to replace the whole file.`,
      )
    }
    return {
      after: newString,
      count: 1,
      firstLine: 1,
      lastLine: Math.max(1, newString.split('\n').length),
      crlf: false,
    }
  }
  let search = oldString
  let insert = newString
  let count = occurrences(text, search)
  let crlf = false
  if (count === 0 && text.includes('\r\n') && oldString.includes('\n') && !oldString.includes('\r\n')) {
    search = oldString.replaceAll('\n', '\r\n')
    insert = newString.replaceAll('\r\n', '\n').replaceAll('\n', '\r\n')
    count = occurrences(text, search)
    crlf = count > 0
  }
  if (count === 0) {
    throw new MatchError(
      'NO_MATCH',
      0,
      `old_string was not found in ${path} (0 matches). It must match the file exactly, including whitespace, ` +
        'indentation and line breaks; read the file again and copy the exact text.',
    )
  }
  if (count > 1 && !replaceAll) {
    throw new MatchError(
      'MULTIPLE_MATCHES',
      count,
      `old_string occurs ${count} times in ${path}, so the edit is ambiguous. Include more surrounding lines to make it unique, ` +
        `or set replace_all to true to replace all ${count} occurrences.`,
    )
  }
  const at = text.indexOf(search)
  // split/join and slicing avoid String.replace's `$&` substitution patterns.
  const after = replaceAll
    ? text.split(search).join(insert)
    : text.slice(0, at) + insert + text.slice(at + search.length)
  const firstLine = lineOf(after, at)
  const lastLine = firstLine + Math.max(0, insert.split('\n').length - 1)
  return { after, count: replaceAll ? count : 1, firstLine, lastLine, crlf }
}
