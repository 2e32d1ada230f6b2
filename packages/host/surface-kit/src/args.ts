// The command-line flags the two terminal faces share (the one-shot `dsh -p` and the TUI), parsed
// one way: `-c/--continue`, `-r/--resume [ID]` (the id optional), `--model [PROVIDER/]MODEL`,
// `--permission-mode MODE` and `-h/--help`, with the same one-line usage errors. Each face adds
// its own flags (`--output-format`, `--max-steps`... for the one-shot) and its own help command
// for the hint. The launcher's flags (`--profile`, `--patch`, `--world`, `--dump-config`) are read
// before the app sees its arguments, so they are not here.
import { type ParseArgsConfig, parseArgs } from 'node:util'
import { splitOptionalValues } from '@dsh/cmdline'

/** A mistake on the command line: one line, for stderr, and exit status 2 (`ExitCode.usage`). */
export class UsageError extends Error {
  override name = 'UsageError'
}

type FlagTable = NonNullable<ParseArgsConfig['options']>

/** The flags every terminal face accepts, as node:util parseArgs options. */
export const SHARED_FLAGS = {
  continue: { type: 'boolean', short: 'c' },
  resume: { type: 'string', short: 'r' },
  model: { type: 'string' },
  'permission-mode': { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const satisfies FlagTable

/** What the shared flags say. Absent values are absent keys. */
export interface SharedOptions {
  model?: string
  permissionMode?: string
  /** Open this stored session. */
  resume?: string
  /** `-r`/`--resume` without an id: pick a session (the face decides how). */
  resumePick: boolean
  /** `-c`: this directory's latest session. */
  continue: boolean
  help: boolean
}

type Values<T extends FlagTable> = {
  [K in keyof T]?: T[K] extends { type: 'boolean' } ? boolean : string
}

export interface FaceArgs<T extends FlagTable> {
  /** The values of the shared flags and of the face's own. */
  values: Values<typeof SHARED_FLAGS & T>
  positionals: string[]
  /** `-r`/`--resume` was given without an id (nothing or an option after it, or `--resume=`). */
  resumeBare: boolean
}

/**
 * Parses `argv` with the shared flags plus the face's `own` (strict: an unknown option is a
 * mistake; positionals anywhere). A parse error becomes a UsageError of its first line, without
 * node's advice about positionals, followed by `(see: <helpCommand>)`.
 */
export function parseFaceArgs<T extends FlagTable>(argv: readonly string[], own: T, helpCommand: string): FaceArgs<T> {
  // `-r` takes an optional id: bare (nothing or an option follows, or `--resume=`), it means pick.
  const { args, bare } = splitOptionalValues(argv, [{ long: 'resume', short: 'r' }])
  let parsed: { values: Record<string, unknown>; positionals: string[] }
  try {
    parsed = parseArgs({ args, allowPositionals: true, strict: true, options: { ...SHARED_FLAGS, ...own } })
  } catch (error) {
    const message = (error as Error).message.split('\n')[0].replace(/\. To specify a positional.*$/, '')
    throw new UsageError(`${message} (see: ${helpCommand})`)
  }
  return {
    values: parsed.values as FaceArgs<T>['values'],
    positionals: parsed.positionals,
    resumeBare: bare.has('resume'),
  }
}

/**
 * The shared options of a parse. Throws UsageError when `--resume` and `--continue` are both
 * given. Call it after the face's own checks, so a face's first complaint stays its own.
 */
export function sharedOptions(parsed: FaceArgs<FlagTable>): SharedOptions {
  const { values } = parsed
  const resumeValue = values.resume as string | undefined
  const resume = resumeValue === '' ? undefined : resumeValue
  const resumePick = parsed.resumeBare || resumeValue === ''
  if ((resume !== undefined || resumePick) && values.continue)
    throw new UsageError('--resume and --continue cannot be combined')
  const model = values.model as string | undefined
  const permissionMode = values['permission-mode'] as string | undefined
  return {
    ...(model !== undefined ? { model } : {}),
    ...(permissionMode !== undefined ? { permissionMode } : {}),
    ...(resume !== undefined ? { resume } : {}),
    resumePick,
    continue: (values.continue as boolean | undefined) ?? false,
    help: (values.help as boolean | undefined) ?? false,
  }
}
