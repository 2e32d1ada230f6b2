// The terminal UI's own command line (what follows the launcher's flags).
// The shared flags (-c, -r, --model, --permission-mode, -h) are parsed by @dsh/surface-kit, the
// same way as the one-shot's; the TUI has no flags of its own yet.
import { parseFaceArgs, sharedOptions, UsageError } from '@dsh/surface-kit'

export { UsageError }

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
  const parsed = parseFaceArgs(argv, {}, 'dsh --profile tui --help')
  return { prompt: parsed.positionals.join(' '), ...sharedOptions(parsed) }
}
