// Constants and configuration of @dsh/sandbox-local shared by its runners: the PID 1 init of a
// confined command, the Landlock helper's path and what the model is told about Landlock.
import { fileURLToPath } from 'node:url'

/** PID 1 inside bwrap: forwards termination signals to the command's whole namespace. */
export const PID1_INIT = [
  "trap 'kill -TERM -1 2>/dev/null; exit 143' TERM",
  "trap 'kill -INT -1 2>/dev/null; exit 130' INT",
  "trap 'kill -HUP -1 2>/dev/null; exit 129' HUP",
  // An asynchronous list gets /dev/null as stdin before its own redirections, so the caller's
  // stdin (a PTY for an interactive program) is passed through fd 3.
  '{ "$@" <&3 3<&- & } 3<&0',
  'wait $!',
].join('\n')

/** PID1_INIT for a request with `mergeStderr`: the command's stderr goes to its stdout, done by the init itself. */
export const PID1_INIT_MERGED = PID1_INIT.replace('"$@" <&3 3<&- &', '"$@" <&3 3<&- 2>&1 &')

export type RunnerChoice = 'auto' | 'bwrap' | 'landlock' | 'none'

export interface SandboxLocalConfig {
  runner: RunnerChoice
  bwrap: string
  node: string
  unshare: string
  probeTimeoutMs: number
  /** Default 50. */
  prewarmDelayMs?: number
  /** Default true: commands start through a confined spawn server per policy, for both runners (see README). */
  spawnServer?: boolean
  /** Default 4: spawn servers (one per distinct policy) kept running at once. */
  maxSpawnServers?: number
  /** Default true: reuse the last probe's result from `<dsh home>/.cache/sandbox-probe.json` (see README). */
  probeCache?: boolean
  /** Default 3,600,000 (1 h): a stored result verified more recently is not probed again (0: every process verifies). */
  probeVerifyIntervalMs?: number
}

/** The Landlock launcher script (plain JavaScript, run by `config.node`). */
export const LANDLOCK_HELPER = fileURLToPath(new URL('../helper/landlock-exec.mjs', import.meta.url))

/** What the Landlock runner does not confine; stated to the model with the policy. */
export const LANDLOCK_NOTE =
  'This sandbox is the Landlock fallback (bubblewrap does not work here): commands run without capabilities and cannot gain privileges; Unix-domain sockets on the filesystem stay reachable.'
/** What the Landlock runner cannot do for the project control files (stated with the policy). */
export const LANDLOCK_CONTROL_NOTE =
  'Without a mount namespace of its own Landlock cannot keep part of a writable directory read-only, so the project control files of the workspace (.mcp.json, .claude/, .codex/, .dsh/, .env, .git/hooks, .git/config) stay writable for commands here; file edits still refuse them.'
/** Added when `unshare` gives each Landlock command its own PID and mount namespace. */
export const PID_NAMESPACE_NOTE =
  'Each command has its own process namespace: processes it leaves running end when it finishes.'
/** Added when the Landlock runner cannot give each command its own PID namespace. */
export const NO_PID_NAMESPACE_NOTE =
  "Commands see the host's other processes, and processes a command leaves running (for example with setsid or nohup) are not ended when it finishes."
