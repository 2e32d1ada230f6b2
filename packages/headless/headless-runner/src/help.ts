// The headless profile's help text, in a module with no imports: the runner prints it after a
// boot, and the launcher prints it without one for `dsh -p --help` / `dsh --profile headless --help`.
export const HELP = `Usage: dsh -p "task" [options]        (or: dsh --profile headless [options] "task")

Runs one task with an agent in the current directory, prints the final answer to stdout and
exits 0 when the turn completed, 1 when it did not (the reason goes to stderr). Options may come
before or after the task.

Options:
  -p, --print          one-shot run (what this profile always does; kept so "dsh -p" means
                       one-shot whatever the default profile is)
  --output-format FMT  text (default): the final assistant text
                       json: one JSON object {type, session_id, is_error, result, usage, sessionId,
                       reason, turns, steps, durationMs}
                       stream-json: one JSON line per session event as it happens, then the json result
  --model [PROVIDER/]MODEL
                       model to use (default: the agent-default-model row); PROVIDER defaults to the
                       default provider
  --max-steps N        most model requests the turn may take (default: the agent-loop row)
  --permission-mode P  permission preset for this run: workspace-write (default; actions that
                       need approval are rejected, since nobody can answer), read-only (reads
                       only) or danger-full-access (never asks); also DSH_PERMISSION_MODE and
                       settings.yaml permissions.default
  --preset NAME        agent preset of a new session: standard (default), minimal, code, or one
                       of $DSH_HOME/presets/NAME/agent.cordis.yml; also DSH_PRESET. A resumed
                       session keeps its own preset
  --apply              with --world e2b: after the run, apply the sandbox's change (the saved
                       patch) to this directory with git apply, checked first: a patch that no
                       longer applies changes nothing and stays saved (exit 1). Without it the
                       patch is only saved and the command that applies it is printed
  -r, --resume [ID]    continue the stored session ID; without ID, list this directory's recent
                       sessions on stderr and exit 2
  -c, --continue       continue the latest session of this directory that ran a turn
  --list-sessions      list this directory's sessions instead of running a task ("dsh sessions")
  --all                with --list-sessions: every stored session, with its directory
  -h, --help           show this help

Launcher flags, accepted anywhere before "--":
  --profile NAME       profile to boot (default: headless)
  --patch FILE         one more patch layer over the profile (repeatable)
  --dump-config        print the composed rows as YAML and exit
  --world NAME         where commands and files live: local (default) or e2b (an E2B sandbox)

Task and stdin: the task is the positional arguments joined by spaces. When stdin is not a
terminal it is read: with no task it is the task; with a task it is appended to the task after a
blank line, as context (a pipe that stays open and silent for 3 s is ignored). The task "-"
reads the task from stdin. An empty task is a usage error. A task that is one "/command" line
(for example "/compact" with --continue, or "/help") runs that command without a model turn;
a command that starts a turn ("/plan fix the parser") prints that turn's result.

Progress: in text mode with stderr on a terminal, one line per model request, tool call and
retry goes to stderr; otherwise stderr carries only errors.
Exit status: 0 completed, 1 the turn did not complete or the run failed, 2 usage error.
`
