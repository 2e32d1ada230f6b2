// `@` file mentions for the editor: `@part` completes to a path of the working directory whose
// relative path contains `part` (case-insensitive), shortest first. The file list comes from
// `rg --files` (the packaged ripgrep: .gitignore honoured, hidden files skipped) started through
// `ctx.subprocess` by @dsh/file-reference's lister, cached for a few seconds. Other sources (the
// MCP servers' resources as `@server:uri`) are listed before the files when they match; everything
// else (slash commands, Tab path completion) is the wrapped provider's.
import type { AutocompleteItem, AutocompleteProvider, AutocompleteSuggestions, Editor } from '@mariozechner/pi-tui'
import { listFiles as listWorkspace } from '@dsh/file-reference'
import type { SubprocessService } from '@dsh/subprocess'
import type { TemplatePick } from './template-panel.ts'

/** Files listed at most; a bigger tree is cut (the mention still works for what was listed). */
export const MAX_FILES = 20_000
const CACHE_MS = 5000
const SHOWN = 20

/** The files of `cwd` (at most MAX_FILES); a listing that fails offers no mentions rather than an error. */
export async function listFiles(
  subprocess: Pick<SubprocessService, 'spawn'>,
  cwd: string,
  signal?: AbortSignal,
): Promise<string[]> {
  try {
    return (await listWorkspace(subprocess, cwd, MAX_FILES, 10_000, signal)).files
  } catch {
    return []
  }
}

/** The `@query` that ends `text`, or undefined. */
export function mentionQuery(text: string): string | undefined {
  const match = /(?:^|\s)@([^\s@]*)$/.exec(text)
  return match ? match[1] : undefined
}

export function rankFiles(files: readonly string[], query: string, limit = SHOWN): string[] {
  const needle = query.toLowerCase()
  return files
    .filter((f) => f.toLowerCase().includes(needle))
    .sort((a, b) => a.length - b.length || a.localeCompare(b))
    .slice(0, limit)
}

/** A mention another source offers (e.g. an MCP resource): inserted as `@<token>`. */
export interface MentionCandidate {
  /** What follows the `@`, e.g. `docs:file:///guide.md`. */
  token: string
  description?: string
  /** A resource template (`server:notes://day/{day}`): picked, it asks for its variables (`fill`). */
  template?: boolean
}

/** Mentions of other sources shown at most, before the files. */
export const SHOWN_OTHERS = 8

/** Candidates whose token or description contains `query` (case-insensitive), in the source's order. */
export function rankCandidates(
  candidates: readonly MentionCandidate[],
  query: string,
  limit = SHOWN_OTHERS,
): MentionCandidate[] {
  const needle = query.toLowerCase()
  return candidates
    .filter((c) => c.token.toLowerCase().includes(needle) || (c.description ?? '').toLowerCase().includes(needle))
    .slice(0, limit)
}

export class MentionProvider implements AutocompleteProvider {
  private cache?: { at: number; files: Promise<string[]> }
  /** The values (`@token`) of the templates last suggested. */
  private templates = new Set<string>()

  constructor(
    private readonly inner: AutocompleteProvider,
    private readonly cwd: string,
    /** Where ripgrep starts; without it `@` offers no files. */
    private readonly subprocess?: Pick<SubprocessService, 'spawn'>,
    /** Other mentions, read at each keystroke (so a source's changes show at once). */
    private readonly others?: () => readonly MentionCandidate[],
    /** Fills a picked template's variables (see `templateFiller`); without it the template is inserted as is. */
    private readonly fill?: (token: string, at: TemplatePick) => void,
  ) {}

  private files(): Promise<string[]> {
    if (!this.cache || Date.now() - this.cache.at > CACHE_MS)
      this.cache = {
        at: Date.now(),
        files: this.subprocess ? listFiles(this.subprocess, this.cwd) : Promise.resolve([]),
      }
    return this.cache.files
  }

  async getSuggestions(
    lines: string[],
    cursorLine: number,
    cursorCol: number,
    options: { signal: AbortSignal; force?: boolean },
  ): Promise<AutocompleteSuggestions | null> {
    const query = mentionQuery((lines[cursorLine] ?? '').slice(0, cursorCol))
    if (query === undefined) return this.inner.getSuggestions(lines, cursorLine, cursorCol, options)
    const others = rankCandidates(this.others?.() ?? [], query)
    const ranked = rankFiles(await this.files(), query, SHOWN - others.length)
    if (options.signal.aborted || ranked.length + others.length === 0) return null
    this.templates = new Set(others.filter((c) => c.template).map((c) => `@${c.token}`))
    return {
      items: [
        ...others.map((c) => ({
          value: `@${c.token}`,
          label: c.token,
          ...(c.description ? { description: c.description } : {}),
        })),
        ...ranked.map((path) => ({ value: `@${path}`, label: path })),
      ],
      prefix: `@${query}`,
    }
  }

  applyCompletion(
    lines: string[],
    cursorLine: number,
    cursorCol: number,
    item: AutocompleteItem,
    prefix: string,
  ): { lines: string[]; cursorLine: number; cursorCol: number } {
    if (!prefix.startsWith('@')) return this.inner.applyCompletion(lines, cursorLine, cursorCol, item, prefix)
    // The menu's prefix is the one its suggestions were computed for; a keystroke since (typed
    // while they were computed) makes it stale, and replacing that many characters would keep a
    // piece of the token (`see @@notes:...`). The `@query` before the cursor now is what goes.
    const query = mentionQuery((lines[cursorLine] ?? '').slice(0, cursorCol))
    if (query !== undefined) prefix = `@${query}`
    if (this.fill && this.templates.has(item.value)) {
      // Nothing is inserted yet: the filled mention replaces the `@query` once the panel answers.
      this.fill(item.value.slice(1), { lines: [...lines], cursorLine, cursorCol, prefix })
      return { lines, cursorLine, cursorCol }
    }
    const line = lines[cursorLine] ?? ''
    const start = cursorCol - prefix.length
    const inserted = `${item.value} `
    const next = [...lines]
    next[cursorLine] = line.slice(0, start) + inserted + line.slice(cursorCol)
    return { lines: next, cursorLine, cursorCol: start + inserted.length }
  }

  shouldTriggerFileCompletion(lines: string[], cursorLine: number, cursorCol: number): boolean {
    if (mentionQuery((lines[cursorLine] ?? '').slice(0, cursorCol)) !== undefined) return true
    return this.inner.shouldTriggerFileCompletion?.(lines, cursorLine, cursorCol) ?? false
  }
}

/**
 * Gives `editor` a new autocomplete provider (the command list changed). pi-tui's
 * `setAutocompleteProvider` closes an open menu; a menu open at the time is asked again through
 * the new provider instead, so a command that arrives while the `/` menu is open joins it.
 */
export function replaceProvider(editor: Editor, provider: AutocompleteProvider): void {
  const open = editor.isShowingAutocomplete()
  editor.setAutocompleteProvider(provider)
  // The editor's own re-ask (what a keystroke in an open menu runs); private in pi-tui's types.
  if (open) (editor as unknown as { tryTriggerAutocomplete?: () => void }).tryTriggerAutocomplete?.()
}
