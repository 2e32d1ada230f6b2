// @dsh/hooks-codex: runs a user's existing Codex command hooks (`~/.codex/hooks.json`, the
// project's `.codex/hooks.json`, and this row's `hooks`) on the same interception points as the
// Claude Code bridge. Codex's hook format follows Claude Code's (events, matchers, exit code 2,
// JSON answers), so the bridge is shared; this package owns what differs: where hooks live, the
// tool names hooks see (`Bash`, `apply_patch`, MCP names) and the `model` stdin field. The
// project's `.codex/hooks.json` runs only once the user trusted it (`ctx.projectTrust`).
import { homedir } from 'node:os'
import { join, resolve } from 'node:path'
import type { Context } from 'cordis'
import Schema from 'schemastery'
import { createHookBridge, readProjectHooks, type ProjectHookFiles } from '@dsh/hooks-claude-code'
import type { ProjectTrustRequests } from '@dsh/project-trust'
import type {} from '@dsh/hook-protocol'
import type {} from '@dsh/agent'

/** dsh tool names as Codex hooks see them; others (MCP's `mcp__server__tool` included) pass unchanged. */
export const CODEX_TOOL_NAMES: Readonly<Record<string, string>> = {
  bash: 'Bash',
  write: 'apply_patch',
  edit: 'apply_patch',
}

export const codexToolName = (name: string) => CODEX_TOOL_NAMES[name] ?? name

export interface HooksCodexConfig {
  hooks: Record<string, unknown>
  /** Read `~/.codex/hooks.json` (under `codexHome`). */
  userHooks: boolean
  /** Read `<cwd>/.codex/hooks.json`. */
  projectHooks: boolean
  cwd?: string
  /** Codex's home directory; default `$CODEX_HOME`, else `~/.codex`. */
  codexHome?: string
  defaultTimeoutSec: number
  maxStopContinuations: number
}

export const Config: Schema<Partial<HooksCodexConfig>, HooksCodexConfig> = Schema.object({
  hooks: Schema.dict(Schema.any()).default({}).description('Hooks in the Codex hooks.json shape.'),
  userHooks: Schema.boolean().default(true).description('Read hooks.json in the Codex home.'),
  projectHooks: Schema.boolean().default(true).description('Read .codex/hooks.json of the project.'),
  cwd: Schema.string().description('Project directory (default: the process working directory).'),
  codexHome: Schema.string().description('Codex home (default: $CODEX_HOME, else ~/.codex).'),
  defaultTimeoutSec: Schema.number().min(0.001).default(60).description('Timeout of a hook without one (seconds).'),
  maxStopContinuations: Schema.natural()
    .default(5)
    .description('Consecutive turns a Stop hook may start before its block is ignored.'),
})

function codexProjectFiles(config: Partial<HooksCodexConfig> | undefined, cwd: string): ProjectHookFiles | undefined {
  if (config?.projectHooks === false) return undefined
  const home = config?.codexHome ?? (process.env.CODEX_HOME || join(homedir(), '.codex'))
  const file = resolve(cwd, '.codex', 'hooks.json')
  // A project that is the Codex home itself: that file is the user's.
  if (config?.userHooks !== false && resolve(home, 'hooks.json') === file) return undefined
  return { source: 'hooks-codex', label: 'Codex hooks', dir: cwd, files: [file] }
}

/** What this row would run from the project of `cwd` (for `dsh trust`; the same items the row gates with). */
export const projectTrustRequests: ProjectTrustRequests = (config, cwd) => {
  const c = config as Partial<HooksCodexConfig> | undefined
  const project = codexProjectFiles(c, typeof c?.cwd === 'string' && c.cwd !== '' ? resolve(cwd, c.cwd) : cwd)
  return project ? [readProjectHooks(project).request] : []
}

export const name = 'hooks-codex'
export const inject = ['subprocess', 'sessions']

export function apply(ctx: Context, config: HooksCodexConfig): void {
  const cwd = config.cwd ?? process.cwd()
  const home = config.codexHome ?? (process.env.CODEX_HOME || join(homedir(), '.codex'))
  const files: string[] = []
  if (config.userHooks) files.push(join(home, 'hooks.json'))
  const project = codexProjectFiles(config, cwd)
  let model = ''
  ctx.on(
    'agent/pre-step',
    async (payload, next) => {
      model = payload.agent.model.model
      return next()
    },
    { prepend: true },
  )
  createHookBridge(
    ctx,
    {
      hooks: config.hooks,
      cwd,
      defaultTimeoutSec: config.defaultTimeoutSec,
      maxStopContinuations: config.maxStopContinuations,
    },
    {
      dialect: 'codex',
      plugin: '@dsh/hooks-codex',
      files,
      ...(project ? { project } : {}),
      toolName: codexToolName,
      env: {},
      extraInput: () => ({ model }),
    },
  )
}
