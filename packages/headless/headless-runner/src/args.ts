// The headless command line: `dsh -p [options] "task"` parsed into HeadlessOptions, with a
// one-line UsageError for every mistake.
import { type FaceArgs, parseFaceArgs, sharedOptions, UsageError } from '@dsh/surface-kit'

export { UsageError }

export type OutputFormat = 'text' | 'json' | 'stream-json'

export interface HeadlessOptions {
  /** The positional arguments joined by spaces ('' when none; '-' means: read it from stdin). */
  task: string
  outputFormat: OutputFormat
  model?: string
  maxSteps?: number
  resume?: string
  /** `-r`/`--resume` without an id: list this directory's sessions and ask for one. */
  resumePick: boolean
  continue: boolean
  listSessions: boolean
  /** With listSessions: every stored session, not only this directory's. */
  all: boolean
  permissionMode?: string
  /** `--preset NAME`: the agent preset a new session is composed from. */
  preset?: string
  /** `--apply`: apply the remote world's end-of-run patch to this directory (needs `--world e2b`). */
  apply: boolean
  help: boolean
}

/** The one-shot's own flags; the shared ones (-c, -r, --model, --permission-mode, -h) are the kit's. */
const HEADLESS_FLAGS = {
  print: { type: 'boolean', short: 'p' },
  'output-format': { type: 'string' },
  'max-steps': { type: 'string' },
  'list-sessions': { type: 'boolean' },
  all: { type: 'boolean' },
  preset: { type: 'string' },
  apply: { type: 'boolean' },
} as const

/**
 * Parses the app arguments. Throws UsageError with a one-line message for a mistake. The task
 * may be empty here: stdin can still supply it (`completeTask`).
 */
export function parseHeadlessArgs(argv: readonly string[]): HeadlessOptions {
  const parsed: FaceArgs<typeof HEADLESS_FLAGS> = parseFaceArgs(argv, HEADLESS_FLAGS, 'dsh -p --help')
  const { values, positionals } = parsed
  const outputFormat = (values['output-format'] ?? 'text') as OutputFormat
  if (!['text', 'json', 'stream-json'].includes(outputFormat)) {
    throw new UsageError(`--output-format must be text, json or stream-json, not '${outputFormat}'`)
  }
  let maxSteps: number | undefined
  if (values['max-steps'] !== undefined) {
    maxSteps = Number(values['max-steps'])
    if (!Number.isInteger(maxSteps) || maxSteps < 1)
      throw new UsageError(`--max-steps must be a positive integer, not '${values['max-steps']}'`)
  }
  const shared = sharedOptions(parsed)
  const listSessions = values['list-sessions'] ?? false
  const all = values.all ?? false
  if (all && !listSessions) throw new UsageError('--all only applies to "dsh sessions"')
  const task = positionals.join(' ')
  if (listSessions && task) throw new UsageError('dsh sessions takes no task')
  return {
    task: listSessions ? '' : task,
    outputFormat,
    model: shared.model,
    maxSteps,
    resume: shared.resume,
    resumePick: shared.resumePick,
    continue: shared.continue,
    listSessions,
    all,
    permissionMode: shared.permissionMode,
    preset: values.preset,
    apply: values.apply ?? false,
    help: shared.help,
  }
}
