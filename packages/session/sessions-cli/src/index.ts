// @dsh/sessions-cli: the `dsh sessions` command. The launcher boots the headless profile with
// `sessions.patch.yml` (this package), which swaps the one-shot runner for this row; it reads the
// app arguments, prints, and exits. The text listing reads the stored summaries only; JSON listing
// and `show` read `ctx.sessionProjections` (titles and stats from the projection cache, so a listing
// reads no log that the cache already covers); `search` reads `ctx.sessionQuery` when mounted.
import { parseArgs } from 'node:util'
import type { Context } from 'cordis'
import Schema from 'schemastery'
import { summarize, type SessionSummary } from '@dsh/session-persistence'
import type { ProjectionRow } from '@dsh/session-projection'
import { fallbackTitle, type SessionTitle } from '@dsh/session-title'
import type { SessionStats } from '@dsh/session-stats'
import type {} from '@dsh/cmdline'
import type { SessionTableRow } from '@dsh/surface-kit'
import { formatStats, sessionTable } from './format.ts'
import type {} from '@dsh/cordis-compat/loader' // declares ctx.loader.exit(code)

export { formatStats, sessionTable, formatAge, formatDuration } from './format.ts'

export const name = '@dsh/sessions-cli'
export const inject = ['sessionProjections']

export interface Config {
  /** Start on `app/ready` (default); false runs at once (tests). */
  waitForReady: boolean
}

/**
 * Rows of the text listing of this directory without `--limit`: the most recently updated ones, with
 * a footer saying how many more there are (`--all` lists every stored session).
 */
export const DEFAULT_LIST_LIMIT = 50

/** 1429 -> "1,429", without Intl: a first toLocaleString initialises ICU (13-38 ms here). */
const groupDigits = (n: number): string => String(n).replace(/\B(?=(\d{3})+(?!\d))/g, ',')

export const Config: Schema<Partial<Config>, Config> = Schema.object({
  waitForReady: Schema.boolean().default(true),
})

export const USAGE = `Usage:
  dsh sessions [--all] [--limit N] [--output-format text|json]
                                                        this directory's ${DEFAULT_LIST_LIMIT} most recent sessions
                                                        (--all: every stored session; --limit N: at most N)
  dsh sessions show ID [--output-format text|json]      one session with its figures
  dsh sessions search "TEXT" [--all] [--limit N] [--output-format text|json]
                                                        sessions whose log contains TEXT (a literal phrase)
`

export class UsageError extends Error {}

export interface Io {
  stdout: NodeJS.WritableStream
  stderr: NodeJS.WritableStream
}

/** A listed session: the stored summary plus its projected title and stats. */
export interface SessionListRow extends SessionSummary {
  titleSource?: string
  stats?: SessionStats
}

export interface ParsedCommand {
  command: 'list' | 'show' | 'search'
  id?: string
  query?: string
  all: boolean
  /** `--limit N` when given (search defaults to 20, the text listing of this directory to `DEFAULT_LIST_LIMIT`). */
  limit?: number
  format: 'text' | 'json'
}

export function parseSessionsArgs(argv: readonly string[]): ParsedCommand {
  const parse = () =>
    parseArgs({
      args: [...argv],
      allowPositionals: true,
      strict: true,
      options: {
        all: { type: 'boolean' },
        'output-format': { type: 'string' },
        limit: { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
    })
  let parsed: ReturnType<typeof parse>
  try {
    parsed = parse()
  } catch (error) {
    throw new UsageError((error as Error).message.split('\n')[0].replace(/\. To specify a positional.*$/, ''))
  }
  const { values, positionals } = parsed
  if (values.help) throw new UsageError('help')
  const format = values['output-format'] ?? 'text'
  if (format !== 'text' && format !== 'json')
    throw new UsageError(`--output-format must be text or json, not '${format}'`)
  let limit: number | undefined
  if (values.limit !== undefined) {
    limit = Number(values.limit)
    if (!Number.isInteger(limit) || limit < 1)
      throw new UsageError(`--limit must be a positive integer, not '${values.limit}'`)
  }
  const [word, ...rest] = positionals
  const base = {
    all: values.all ?? false,
    ...(limit !== undefined ? { limit } : {}),
    format: format as 'text' | 'json',
  }
  if (word === undefined || word === 'list') {
    if (rest.length) throw new UsageError(`unexpected argument '${rest[0]}'`)
    return { command: 'list', ...base }
  }
  if (word === 'show') {
    if (rest.length !== 1) throw new UsageError('show takes one session id: dsh sessions show ID')
    return { command: 'show', id: rest[0], ...base }
  }
  if (word === 'search') {
    const query = rest.join(' ')
    if (!query.trim()) throw new UsageError('search needs some text: dsh sessions search "TEXT"')
    return { command: 'search', query, ...base }
  }
  throw new UsageError(`unknown sessions command '${word}' (list, show or search)`)
}

/** Title of a row: the projected one, else the stored summary's, else the fallback of the first prompt. */
function titleOf(row: ProjectionRow, title: SessionTitle | null | undefined): string | undefined {
  return (
    title?.title ?? row.summary.title ?? (row.summary.firstPrompt ? fallbackTitle(row.summary.firstPrompt) : undefined)
  )
}

/** The listed row: the stored summary with its title and stats. */
export function rowOf(row: ProjectionRow): SessionListRow {
  const title = row.values.title as SessionTitle | null | undefined
  const stats = row.values.sessionStats as SessionStats | undefined
  const text = titleOf(row, title)
  return {
    ...row.summary,
    ...(text !== undefined ? { title: text } : {}),
    ...(title?.source ? { titleSource: title.source } : {}),
    ...(stats ? { stats } : {}),
  }
}

/** Same rule as `dsh -c`: ran a turn (or is damaged), and is not a subagent's child log. */
const continuable = (row: SessionSummary) =>
  (row.turns > 0 || row.damaged !== undefined) && row.parentSession === undefined

/** Drops the per-turn detail from list rows (kept by `show`). */
function compact(row: SessionListRow): SessionListRow {
  if (!row.stats) return row
  const { perTurn: _perTurn, ...stats } = row.stats
  return { ...row, stats: stats as SessionStats }
}

export async function runSessionsCommand(
  ctx: Context,
  argv: readonly string[],
  io: Io,
  cwd = process.cwd(),
): Promise<number> {
  let cmd: ParsedCommand
  try {
    cmd = parseSessionsArgs(argv)
  } catch (error) {
    if ((error as Error).message === 'help') {
      io.stdout.write(USAGE)
      return 0
    }
    io.stderr.write(`dsh sessions: ${(error as Error).message}\n${USAGE}`)
    return 2
  }
  const persistence = ctx.get('sessionPersistence')
  if (!persistence) {
    io.stderr.write('dsh sessions: needs a session-persistence row in the profile\n')
    return 1
  }
  if (cmd.command === 'search') return search(ctx, cmd, io, cwd)
  if (cmd.command === 'show') {
    let row = await showFromLog(ctx, cmd.id!)
    if (row === undefined) {
      const [found] = await ctx.sessionProjections.list(undefined, { only: (summary) => summary.id === cmd.id })
      row = found ? rowOf(found) : null
    }
    if (!row) {
      io.stderr.write(`dsh sessions: no stored session ${JSON.stringify(cmd.id)} (dsh sessions --all lists them)\n`)
      return 1
    }
    io.stdout.write(cmd.format === 'json' ? JSON.stringify(row) + '\n' : formatStats(row))
    return 0
  }
  // Only the rows shown: without --all, the sessions of this directory.
  const only = cmd.all ? undefined : (row: SessionSummary) => row.cwd === cwd && continuable(row)
  if (cmd.format === 'json') {
    // Every row unless --limit says otherwise: a reader of JSON gets no footer to say rows are missing.
    const listed = await ctx.sessionProjections.list(undefined, { only })
    const rows = cmd.limit !== undefined ? listed.slice(0, cmd.limit) : listed
    io.stdout.write(JSON.stringify(rows.map((row) => compact(rowOf(row)))) + '\n')
    return 0
  }
  // The text table: this directory's `DEFAULT_LIST_LIMIT` most recent rows, every row with --all,
  // at most N with --limit N. The rows come newest first, so the limit keeps the most recent.
  const limit = cmd.limit ?? (cmd.all ? Number.POSITIVE_INFINITY : DEFAULT_LIST_LIMIT)
  // The table shows what the stored summaries hold: their title is the latest `session/title`, the
  // same text as the title unit's, so it reads no projection (neither the cache nor any log).
  const shown: SessionTableRow[] = []
  let matching = 0
  // Without --all the store lists this directory's sessions only (the JSONL store reads and checks
  // no other directory's); `only` then keeps the continuable ones.
  for (const s of await persistence.list(cmd.all ? undefined : { cwd })) {
    if (only && !only(s)) continue
    // Counted, not built: only the rows shown are formatted.
    if (++matching > limit) continue
    // A few fields: no copy of each whole summary (10,000 rows).
    shown.push({
      id: s.id,
      cwd: s.cwd,
      createdAt: s.createdAt,
      updatedAt: s.updatedAt,
      turns: s.turns,
      title: s.title ?? (s.firstPrompt ? fallbackTitle(s.firstPrompt) : undefined),
      firstPrompt: s.firstPrompt,
      damaged: s.damaged,
    })
  }
  if (shown.length === 0) {
    io.stderr.write(
      cmd.all
        ? 'dsh: no stored sessions\n'
        : `dsh: no stored sessions for ${cwd} (dsh sessions --all lists every one)\n`,
    )
    return 0
  }
  io.stdout.write(sessionTable(shown, cmd.all))
  // The footer goes to stderr, so the table on stdout keeps only its columns for scripts.
  if (matching > shown.length) {
    const where = cmd.all ? 'stored sessions' : `sessions of ${cwd}`
    const more = cmd.all ? '--limit N shows N' : '--limit N shows N, --all lists every stored session'
    io.stderr.write(`dsh: the ${shown.length} most recent of ${groupDigits(matching)} ${where} (${more})\n`)
  }
  return 0
}

/**
 * `show` of a stored session from its own log: its summary and every unit folded from the stored
 * events, without listing every session (a fresh process spends most of a listing in
 * `persistence.list()`). `null`: no such session; `undefined`: live, damaged or otherwise
 * unreadable here, so the caller takes the listing, which says how.
 */
async function showFromLog(ctx: Context, id: string): Promise<SessionListRow | null | undefined> {
  if (ctx.sessionProjections.snapshot(id)) return undefined
  const persistence = ctx.get('sessionPersistence')
  if (!persistence) return undefined
  let loaded: Awaited<ReturnType<typeof persistence.inspect>>
  try {
    loaded = await persistence.inspect(id)
  } catch (error) {
    const code = (error as { code?: string }).code
    return code === 'NOT_FOUND' || code === 'BAD_ID' ? null : undefined
  }
  // As stored: crash repairs are what a later load would append, not part of the log yet.
  const events = loaded.events.slice(0, loaded.events.length - loaded.repairs.length)
  return rowOf({
    summary: summarize(loaded.header, events),
    values: ctx.sessionProjections.foldEvents(events),
    source: 'rebuilt',
  })
}

async function search(ctx: Context, cmd: ParsedCommand, io: Io, cwd: string): Promise<number> {
  const query = ctx.get('sessionQuery')
  if (!query) {
    io.stderr.write(
      'dsh sessions: search needs a session-query row (for example @dsh/session-query-sqlite) in the profile\n',
    )
    return 1
  }
  const hits = await query.search({ text: cmd.query!, ...(cmd.all ? {} : { cwd }), limit: cmd.limit ?? 20 })
  if (cmd.format === 'json') {
    io.stdout.write(JSON.stringify(hits) + '\n')
    return 0
  }
  if (hits.length === 0) {
    io.stderr.write(
      `dsh: no session ${cmd.all ? '' : `of ${cwd} `}contains ${JSON.stringify(cmd.query)}${cmd.all ? '' : ' (--all searches every one)'}\n`,
    )
    return 0
  }
  for (const hit of hits) {
    io.stdout.write(`${hit.sessionId}  ${hit.title ?? ''}\n  seq ${hit.seq} ${hit.type}: ${hit.snippet}\n`)
  }
  return 0
}

export function apply(ctx: Context, config: Config): void {
  const io: Io = { stdout: process.stdout, stderr: process.stderr }
  // The command's layer keeps only the session rows, so the plugins that registered the event
  // types of older sessions (goals, MCP, plan mode...) are not mounted here: reading is all this
  // process does, and a log must not be refused for a type whose plugin is not mounted.
  ctx.inject(['sessionPersistence'], (inner) => void inner.sessionPersistence.readAnyEventType())
  const start = async () => {
    let code: number
    try {
      code = await runSessionsCommand(ctx, ctx.get('cmdlineArgs')?.argv ?? [], io)
    } catch (error) {
      io.stderr.write(`dsh sessions: ${(error as Error)?.message ?? String(error)}\n`)
      code = 1
    }
    // app-boot's loader takes an exit code (declared by @dsh/cordis-compat/loader).
    const loader = ctx.get('loader')
    if (loader?.exit) loader.exit(code)
    else process.exitCode = code
  }
  if (config.waitForReady) ctx.on('app/ready', () => void start())
  else void start()
}
