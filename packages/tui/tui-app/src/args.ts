// The terminal UI's own command line (what follows the launcher's flags).
import { parseArgs } from 'node:util'
import { splitOptionalValues } from '@dsh/cmdline'

export class UsageError extends Error {}

export interface TuiOptions {
  /** Typed into the editor and sent at start ('' when none). */
  prompt: string
  model?: string
  permissionMode?: string
  /** Open this stored session. */
  resume?: string
  /** `-r` without an id: open the resume picker at start. */
  resumePick: boolean
  /** `-c`: open this directory's latest session. */
  continue: boolean
  help: boolean
}

export const TUI_HELP = `Usage: dsh [options] [prompt]      (in an interactive terminal)

Opens the terminal UI. A prompt given here is sent as the first message.

Options:
  -c, --continue               open this directory's latest session
  -r, --resume [ID]            open session ID; without ID, pick one from a list
  --model [PROVIDER/]MODEL     model of this session
  --permission-mode MODE       permission preset of this session
  -h, --help                   this help

Keys: Enter sends · Alt+Enter or Shift+Enter new line · Esc cancels the running turn ·
Up/Down history · / commands · Tab completes · Ctrl+O expands tool output ·
Ctrl+C clears the input (twice on an empty input exits) · Ctrl+D on an empty input exits.
`

/** Parses the app arguments; throws UsageError with a one-line message for a mistake. */
export function parseTuiArgs(argv: readonly string[]): TuiOptions {
  // `-r` takes an optional id: bare (nothing or an option follows, or `--resume=`), it opens the picker.
  const { args, bare } = splitOptionalValues(argv, [{ long: 'resume', short: 'r' }])
  const pick = bare.has('resume')
  const parse = () =>
    parseArgs({
      args,
      allowPositionals: true,
      strict: true,
      options: {
        continue: { type: 'boolean', short: 'c' },
        resume: { type: 'string', short: 'r' },
        model: { type: 'string' },
        'permission-mode': { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
    })
  let parsed: ReturnType<typeof parse>
  try {
    parsed = parse()
  } catch (error) {
    const message = (error as Error).message.split('\n')[0].replace(/\. To specify a positional.*$/, '')
    throw new UsageError(`${message} (see: dsh --profile tui --help)`)
  }
  const { values, positionals } = parsed
  const resume = values.resume === '' ? undefined : values.resume
  const resumePick = pick || values.resume === ''
  if ((resume !== undefined || resumePick) && values.continue)
    throw new UsageError('--resume and --continue cannot be combined')
  return {
    prompt: positionals.join(' '),
    ...(values.model !== undefined ? { model: values.model } : {}),
    ...(values['permission-mode'] !== undefined ? { permissionMode: values['permission-mode'] } : {}),
    ...(resume !== undefined ? { resume } : {}),
    resumePick,
    continue: values.continue ?? false,
    help: values.help ?? false,
  }
}
