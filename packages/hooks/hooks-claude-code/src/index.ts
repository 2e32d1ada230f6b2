// @dsh/hooks-claude-code: runs a user's existing Claude Code command hooks on dsh's interception
// points: PreToolUse on `tools/pre-execute`, PostToolUse on `tools/post-execute`, UserPromptSubmit
// on `agent/pre-step` (steps that enter human input), Stop on `agent/turn-stopping` (SubagentStop
// when the agent is a subagent's child), PreCompact on `compaction/before`, Notification on
// `approval/requested`. Hooks come
// from `~/.claude/settings.json`, the project's `.claude/settings.json` and
// `.claude/settings.local.json`, and this row's `hooks`; each run is logged as `hook/run`.
// The project's files are the project's, not the user's: their hooks run only once the user
// trusted that content through `ctx.projectTrust`.
import { homedir } from 'node:os'
import { join, resolve } from 'node:path'
import type { Context } from 'cordis'
import Schema from 'schemastery'
import type { ProjectTrustRequests } from '@dsh/project-trust'
import { createHookBridge, type ProjectHookFiles, readProjectHooks } from './bridge.ts'

export {
  createHookBridge,
  hookFileDigests,
  hookTrustItems,
  readProjectHooks,
  type BridgeOptions,
  type HookDialect,
  type ProjectHookFiles,
} from './bridge.ts'

export {
  checkHooks,
  readSettingsHooks,
  SUPPORTED_EVENTS,
  UNSUPPORTED_EVENTS,
  type HookEntry,
  type SupportedEvent,
} from './config.ts'

/** dsh tool names and the Claude Code names hooks match on and receive. Others pass unchanged (MCP tools share the `mcp__server__tool` form). */
export const TOOL_NAMES: Readonly<Record<string, string>> = {
  bash: 'Bash',
  read: 'Read',
  read_image: 'Read',
  write: 'Write',
  edit: 'Edit',
  grep: 'Grep',
  glob: 'Glob',
  todo_write: 'TodoWrite',
  ask_user_question: 'AskUserQuestion',
  subagent: 'Task',
}

export const claudeToolName = (name: string) => TOOL_NAMES[name] ?? name

export interface HooksClaudeCodeConfig {
  /** Hooks in the Claude Code `hooks` shape, run in addition to the settings files'. */
  hooks: Record<string, unknown>
  /** Read `~/.claude/settings.json`. */
  userSettings: boolean
  /** Read `<cwd>/.claude/settings.json` and `<cwd>/.claude/settings.local.json`. */
  projectSettings: boolean
  /** Project directory (also `$CLAUDE_PROJECT_DIR`); default the process cwd. */
  cwd?: string
  /** The user's home, where `.claude/settings.json` is looked up; default the OS home. */
  userHome?: string
  /** Timeout of a hook that sets none (seconds, like Claude Code's `timeout`). */
  defaultTimeoutSec: number
  /** Consecutive turns a Stop hook may add before its block is ignored. */
  maxStopContinuations: number
}

export const Config: Schema<Partial<HooksClaudeCodeConfig>, HooksClaudeCodeConfig> = Schema.object({
  hooks: Schema.dict(Schema.any())
    .default({})
    .description(
      'Hooks in the Claude Code shape: {PreToolUse: [{matcher, hooks: [{type: command, command, timeout}]}], ...}.',
    ),
  userSettings: Schema.boolean().default(true).description('Read ~/.claude/settings.json.'),
  projectSettings: Schema.boolean()
    .default(true)
    .description('Read .claude/settings.json and .claude/settings.local.json of the project.'),
  cwd: Schema.string().description('Project directory (default: the process working directory).'),
  userHome: Schema.string().description('Home directory holding .claude/settings.json (default: the OS home).'),
  defaultTimeoutSec: Schema.number().min(0.001).default(60).description('Timeout of a hook without one (seconds).'),
  maxStopContinuations: Schema.natural()
    .default(5)
    .description('Consecutive turns a Stop hook may start before its block is ignored.'),
})

export const name = 'hooks-claude-code'
export const inject = ['subprocess', 'sessions']
/** The project hook files of a Claude Code row: none when `projectSettings` is off, and never the user's own file (cwd = home). */
function claudeProjectFiles(
  config: Partial<HooksClaudeCodeConfig> | undefined,
  cwd: string,
): ProjectHookFiles | undefined {
  if (config?.projectSettings === false) return undefined
  const userFile =
    config?.userSettings === false ? undefined : join(config?.userHome ?? homedir(), '.claude', 'settings.json')
  const files = [resolve(cwd, '.claude', 'settings.json'), resolve(cwd, '.claude', 'settings.local.json')].filter(
    (file) => userFile === undefined || resolve(file) !== resolve(userFile),
  )
  return { source: 'hooks-claude-code', label: 'Claude Code hooks', dir: cwd, files }
}

/** What this row would run from the project of `cwd` (for `dsh trust`; the same items the row gates with). */
export const projectTrustRequests: ProjectTrustRequests = (config, cwd) => {
  const c = config as Partial<HooksClaudeCodeConfig> | undefined
  const project = claudeProjectFiles(c, typeof c?.cwd === 'string' && c.cwd !== '' ? resolve(cwd, c.cwd) : cwd)
  return project ? [readProjectHooks(project).request] : []
}

export function apply(ctx: Context, config: HooksClaudeCodeConfig): void {
  const cwd = config.cwd ?? process.cwd()
  const files: string[] = []
  if (config.userSettings) files.push(join(config.userHome ?? homedir(), '.claude', 'settings.json'))
  const project = claudeProjectFiles(config, cwd)
  createHookBridge(
    ctx,
    {
      hooks: config.hooks,
      cwd,
      defaultTimeoutSec: config.defaultTimeoutSec,
      maxStopContinuations: config.maxStopContinuations,
    },
    {
      dialect: 'claude-code',
      plugin: '@dsh/hooks-claude-code',
      files,
      ...(project ? { project } : {}),
      toolName: claudeToolName,
      env: { CLAUDE_PROJECT_DIR: cwd },
    },
  )
}
