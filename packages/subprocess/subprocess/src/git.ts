// Safe git: the one way dsh itself runs `git` (for its own purposes, never the model's commands).
// A repository's own configuration (`.git/config`, its includes, `.gitattributes` drivers) can name
// programs git starts by itself: `core.fsmonitor` on nearly every command, hooks, pagers, external
// diff and textconv drivers, clean/smudge filters, credential helpers, askpass, ssh commands, gpg.
// A cloned stranger's repository is not the user, so every git call dsh makes goes through
// `safeGitSpec` / `runSafeGit`: those programs are switched off by `-c` overrides (the command line
// wins over every config file) and environment settings, network transports are refused, and
// nothing prompts. Pure helpers over the `ctx.subprocess` seam: no spawning of their own.
import type { EnvSpec, KillSpec, ProcessExit, SpawnSpec } from './types.ts'
import type { SubprocessService } from './index.ts'

/**
 * `-c` overrides for the settings that make git start a program, each set to a value that runs
 * nothing. Drivers named by the repository (`filter.<name>.*`, `diff.<name>.*`, `merge.<name>.*`)
 * cannot be listed in advance: see `gitDriverOverrides`.
 */
export const SAFE_GIT_CONFIG: ReadonlyArray<readonly [key: string, value: string]> = [
  ['core.fsmonitor', 'false'],
  ['core.hooksPath', '/dev/null'],
  ['core.pager', 'cat'],
  ['core.editor', 'true'],
  ['sequence.editor', 'true'],
  ['core.askPass', ''],
  ['core.sshCommand', 'false'],
  ['core.gitProxy', ''],
  ['core.alternateRefsCommand', ''],
  ['credential.helper', ''],
  ['diff.external', ''],
  ['gpg.program', 'false'],
  ['gpg.openpgp.program', 'false'],
  ['gpg.x509.program', 'false'],
  ['gpg.ssh.program', 'false'],
  ['commit.gpgSign', 'false'],
  ['tag.gpgSign', 'false'],
  ['log.showSignature', 'false'],
  ['submodule.recurse', 'false'],
  // Only local repositories: no ssh, http or ext:: transport (each can start a configured program).
  ['protocol.allow', 'never'],
  ['protocol.file.allow', 'always'],
]

/** Environment for a safe git child: no system config, no prompts, no pager, no editor. */
export const SAFE_GIT_ENV: Readonly<Record<string, string>> = {
  GIT_CONFIG_NOSYSTEM: '1',
  GIT_TERMINAL_PROMPT: '0',
  GIT_PAGER: 'cat',
  PAGER: 'cat',
  GIT_EDITOR: 'true',
  GIT_SEQUENCE_EDITOR: 'true',
  // Empty askpass variables: git then asks nobody (the terminal prompt is off above).
  GIT_ASKPASS: '',
  SSH_ASKPASS: '',
  GIT_OPTIONAL_LOCKS: '0',
}

/** Inherited variables that would make git start a program or read other configuration; removed. */
export const UNSAFE_GIT_ENV: readonly string[] = [
  'GIT_EXTERNAL_DIFF',
  'GIT_SSH',
  'GIT_SSH_COMMAND',
  'GIT_PROXY_COMMAND',
  'GIT_EXEC_PATH',
  'GIT_CONFIG',
  'GIT_CONFIG_COUNT',
  'GIT_CONFIG_PARAMETERS',
  'GIT_DIR',
  'GIT_WORK_TREE',
  'GIT_INDEX_FILE',
  'GIT_TRACE',
]

/** Options always placed before the subcommand: no pager, no replace refs. */
export const SAFE_GIT_OPTIONS: readonly string[] = ['--no-pager', '--no-replace-objects']

/**
 * Arguments of the query that lists the repository's program-running driver settings, for
 * `gitDriverOverrides`. `git config` reads configuration only (no index, no fsmonitor, no hooks).
 */
export const GIT_DRIVER_QUERY: readonly string[] = [
  'config',
  '--null',
  '--name-only',
  '--get-regexp',
  '^(filter|diff|merge)\\..+\\.(clean|smudge|process|command|textconv|driver|required)$',
]

/** Subcommands that produce diffs: they also get `--no-ext-diff --no-textconv`. */
const DIFF_COMMANDS = new Set([
  'diff',
  'log',
  'show',
  'whatchanged',
  'format-patch',
  'diff-tree',
  'diff-index',
  'diff-files',
])
/** Subcommands that apply textconv by default but take no `--no-ext-diff`. */
const TEXTCONV_COMMANDS = new Set(['blame', 'annotate'])

/**
 * Overrides (key, value) that disable every driver `output` (of `GIT_DRIVER_QUERY`, NUL-separated
 * names) names: clean/smudge/process filters become no-ops and not required, diff drivers lose
 * their command and textconv, merge drivers their program. `safeGitSpec` passes them through
 * `GIT_CONFIG_KEY_<n>`/`GIT_CONFIG_VALUE_<n>`, which keep key and value apart (a driver name may
 * hold `=`, which a `-c key=value` argument would split at).
 */
export function gitDriverOverrides(output: string): Array<[key: string, value: string]> {
  const pairs: Array<[string, string]> = []
  const seen = new Set<string>()
  for (const name of output.split(/[\0\n]/)) {
    const key = name.trim()
    if (!key || seen.has(key)) continue
    seen.add(key)
    pairs.push([key, /\.required$/i.test(key) ? 'false' : ''])
  }
  return pairs
}

export interface SafeGitOptions {
  /** Absolute working directory (the repository or a directory inside it). */
  cwd: string
  /** Variables set on top of the safe environment (they cannot switch the safe ones off). */
  env?: Record<string, string>
  /** Driver overrides from `gitDriverOverrides` (runSafeGit queries and adds them itself). */
  driverOverrides?: Array<[key: string, value: string]>
  kill?: KillSpec
  signal?: AbortSignal
}

/**
 * The spawn spec of `git <args>` that runs no program the repository configures. Pass it to
 * `ctx.subprocess.spawn`. Diff-producing subcommands also get `--no-ext-diff --no-textconv`.
 * Without `driverOverrides` the repository's named filter drivers still apply to commands that
 * read or write the work tree (`add`, `checkout`, `status`, `diff`): use `runSafeGit`, which
 * queries them first.
 */
export function safeGitSpec(args: readonly string[], options: SafeGitOptions): SpawnSpec {
  if (!Array.isArray(args) || args.length === 0 || !args.every((arg) => typeof arg === 'string'))
    throw new TypeError('safeGit: args must be a non-empty array of strings')
  const [command, ...rest] = args
  const overrides = SAFE_GIT_CONFIG.flatMap(([key, value]) => ['-c', `${key}=${value}`])
  const diffOptions = DIFF_COMMANDS.has(command)
    ? ['--no-ext-diff', '--no-textconv']
    : TEXTCONV_COMMANDS.has(command)
      ? ['--no-textconv']
      : []
  const set: Record<string, string | undefined> = {}
  for (const name of UNSAFE_GIT_ENV) set[name] = undefined
  Object.assign(set, options.env ?? {}, SAFE_GIT_ENV)
  const drivers = options.driverOverrides ?? []
  if (drivers.length > 0) {
    set.GIT_CONFIG_COUNT = String(drivers.length)
    drivers.forEach(([key, value], index) => {
      set[`GIT_CONFIG_KEY_${index}`] = key
      set[`GIT_CONFIG_VALUE_${index}`] = value
    })
  }
  const env: EnvSpec = { base: 'scrubbed', set }
  return {
    file: 'git',
    args: [...SAFE_GIT_OPTIONS, ...overrides, command, ...diffOptions, ...rest],
    cwd: options.cwd,
    env,
    kill: options.kill ?? { graceMs: 2_000 },
    stdin: 'ignore',
    retentionMode: 'separate',
    retention: { maxBytes: 16 << 20, headBytes: 8 << 20, tailBytes: 8 << 20 },
    ...(options.signal ? { signal: options.signal } : {}),
  }
}

export interface SafeGitResult {
  /** Exit code, or null when git did not start or died from a signal (see `exit`). */
  code: number | null
  stdout: string
  stderr: string
  exit: ProcessExit
}

/**
 * Runs `git <args>` safely through `subprocess`: first the driver query (so the repository's
 * filter, diff and merge drivers are switched off by name), then the command. Never throws for
 * a git failure; read `code` and `stderr`.
 */
export async function runSafeGit(
  subprocess: SubprocessService,
  args: readonly string[],
  options: SafeGitOptions,
): Promise<SafeGitResult> {
  let driverOverrides = options.driverOverrides
  if (driverOverrides === undefined) {
    const query = await collect(subprocess, safeGitSpec(GIT_DRIVER_QUERY, { ...options, driverOverrides: [] }))
    // Exit 1: no such keys. Anything else (not a repository, git missing) leaves nothing to disable.
    driverOverrides = query.code === 0 ? gitDriverOverrides(query.stdout) : []
  }
  return collect(subprocess, safeGitSpec(args, { ...options, driverOverrides }))
}

async function collect(subprocess: SubprocessService, spec: SpawnSpec): Promise<SafeGitResult> {
  const exit = await subprocess.spawn(spec).exited
  const text = (stream: 'stdout' | 'stderr') => {
    const kept = exit.output[stream]
    if (!kept) return ''
    const decoder = new TextDecoder()
    return kept.truncated
      ? `${decoder.decode(kept.head)}\n[...]\n${decoder.decode(kept.tail)}`
      : decoder.decode(kept.head)
  }
  return {
    code: exit.code,
    stdout: text('stdout'),
    stderr: text('stderr') || (exit.spawnError ? exit.spawnError.message : ''),
    exit,
  }
}
