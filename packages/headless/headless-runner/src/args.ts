// The headless command line: `dsh -p [options] "task"` parsed into HeadlessOptions, with a
// one-line UsageError for every mistake.
import { parseArgs } from 'node:util'
import { splitOptionalValues } from '@dsh/cmdline'

export type OutputFormat = 'text' | 'json' | 'stream-json'

export class UsageError extends Error {}

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

/** `-r`/`--resume` take an optional id: bare, they open the newest/picker (see splitOptionalValues). */
function splitOptionalResume(argv: readonly string[]): { args: string[]; pick: boolean } {
  const { args, bare } = splitOptionalValues(argv, [{ long: 'resume', short: 'r' }])
  return { args, pick: bare.has('resume') }
}

/**
 * Parses the app arguments. Throws UsageError with a one-line message for a mistake. The task
 * may be empty here: stdin can still supply it (`completeTask`).
 */
export function parseHeadlessArgs(argv: readonly string[]): HeadlessOptions {
  const { args, pick } = splitOptionalResume(argv)
  const parse = () =>
    parseArgs({
      args,
      allowPositionals: true,
      strict: true,
      options: {
        print: { type: 'boolean', short: 'p' },
        'output-format': { type: 'string' },
        model: { type: 'string' },
        'max-steps': { type: 'string' },
        resume: { type: 'string', short: 'r' },
        continue: { type: 'boolean', short: 'c' },
        'list-sessions': { type: 'boolean' },
        all: { type: 'boolean' },
        'permission-mode': { type: 'string' },
        preset: { type: 'string' },
        apply: { type: 'boolean' },
        help: { type: 'boolean', short: 'h' },
      },
    })
  let parsed: ReturnType<typeof parse>
  try {
    parsed = parse()
  } catch (error) {
    const message = (error as Error).message.split('\n')[0].replace(/\. To specify a positional.*$/, '')
    throw new UsageError(`${message} (see: dsh -p --help)`)
  }
  const { values, positionals } = parsed
  const help = values.help ?? false
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
  const resumePick = pick || values.resume === ''
  const resume = values.resume === '' ? undefined : values.resume
  if ((resume !== undefined || resumePick) && values.continue)
    throw new UsageError('--resume and --continue cannot be combined')
  const listSessions = values['list-sessions'] ?? false
  const all = values.all ?? false
  if (all && !listSessions) throw new UsageError('--all only applies to "dsh sessions"')
  const task = positionals.join(' ')
  if (listSessions && task) throw new UsageError('dsh sessions takes no task')
  return {
    task: listSessions ? '' : task,
    outputFormat,
    model: values.model,
    maxSteps,
    resume,
    resumePick,
    continue: values.continue ?? false,
    listSessions,
    all,
    permissionMode: values['permission-mode'],
    preset: values.preset,
    apply: values.apply ?? false,
    help,
  }
}
