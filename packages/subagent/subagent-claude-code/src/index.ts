// @dsh/subagent-claude-code: the `claude-code` subagent provider. Each child is one run of the
// Claude Code CLI (`claude`) in the parent's workspace, driven over its stream-json wire (the wire
// the Claude Agent SDK speaks to the same executable): one self-contained text task in, the final
// `result` line out. Dormant until a `claude` executable is installed: a missing one is a
// START_FAILED refusal that names the command.
import type { Context } from 'cordis'
import Schema from 'schemastery'
import type { TokenUsage } from '@dsh/llm'
import {
  childEnv,
  startLineProcess,
  type ChildOutcome,
  type LineProcess,
  type ProviderChild,
  type ProviderStartRequest,
  type SubagentProvider,
} from '@dsh/subagent'
/** The parent's sandbox mode, as the seam hands it to a provider. */
type SandboxMode = ProviderStartRequest['inherit']['mode']
import type {} from '@dsh/subprocess'

export const name = 'subagent-claude-code'
export const inject = ['subagents', 'subprocess']

export type ClaudePermissionMode = 'default' | 'acceptEdits' | 'bypassPermissions' | 'plan'

export interface SubagentClaudeCodeConfig {
  provider: string
  /** The executable (a name looked up on PATH, or a path). */
  command: string
  /** Extra arguments after the ones the wire needs. */
  args: string[]
  env: Record<string, string>
  /** Credentials the child gets; every other credential-looking variable is scrubbed. */
  credentials: string[]
  /** `--model` for the child; empty: Claude Code's own default. */
  model: string
  /** `--permission-mode`; empty: Claude Code's default (tools needing approval are refused in a headless run). */
  permissionMode: '' | ClaudePermissionMode
  /** `--max-turns`; 0: no limit. */
  maxTurns: number
  closeTimeoutMs: number
}

export const Config: Schema<Partial<SubagentClaudeCodeConfig>, SubagentClaudeCodeConfig> = Schema.object({
  provider: Schema.string().default('claude-code').description('Name of the provider under ctx.subagents.'),
  command: Schema.string().default('claude').description('The Claude Code executable (on PATH, or a path).'),
  args: Schema.array(Schema.string()).default([]).description('Extra arguments for the executable.'),
  env: Schema.dict(Schema.string()).default({}).description('Extra environment variables for the child.'),
  credentials: Schema.array(Schema.string())
    .default(['ANTHROPIC_API_KEY', 'ANTHROPIC_AUTH_TOKEN', 'CLAUDE_CODE_OAUTH_TOKEN'])
    .description('Credentials passed to the child; other credential-looking variables are scrubbed.'),
  model: Schema.string().default('').description('Model for the child (--model); empty: its default.'),
  permissionMode: Schema.union(['', 'default', 'acceptEdits', 'bypassPermissions', 'plan'] as const)
    .default('')
    .description('--permission-mode for the child; empty: its default.'),
  maxTurns: Schema.natural().default(0).description('--max-turns for the child; 0: no limit.'),
  closeTimeoutMs: Schema.natural()
    .default(2000)
    .description('How long a closing child may take before it is terminated.'),
}) as Schema<Partial<SubagentClaudeCodeConfig>, SubagentClaudeCodeConfig>

/** Claude Code's tools that change files or run commands: refused to the child of a read-only parent. */
export const WRITING_TOOLS = ['Bash', 'Edit', 'MultiEdit', 'Write', 'NotebookEdit']

/**
 * The `--permission-mode` a child of a parent in `mode` runs with: the configured one, lowered
 * so it never grants more than the parent has (`bypassPermissions` only under danger-full-access,
 * `acceptEdits` not under read-only). Headless, a tool that needs approval is refused.
 */
export function childPermissionMode(
  configured: '' | ClaudePermissionMode,
  mode: SandboxMode,
): '' | ClaudePermissionMode {
  if (mode === 'danger-full-access') return configured
  if (mode === 'workspace-write') return configured === 'bypassPermissions' ? 'acceptEdits' : configured
  return configured === 'plan' ? 'plan' : 'default'
}

/**
 * Settings (`--settings`, above the project's and the user's own) for a child of a confined
 * parent: Claude Code's Bash sandbox on, failing when it cannot start and never run outside it
 * (so a project's `.claude/settings.json` cannot allow unconfined commands), and no hooks (a
 * hook command runs outside every sandbox; a cloned project may ship some).
 */
export function confinedSettings(mode: SandboxMode): Record<string, unknown> | undefined {
  if (mode === 'danger-full-access') return undefined
  return { sandbox: { enabled: true, failIfUnavailable: true, allowUnsandboxedCommands: false }, disableAllHooks: true }
}

/**
 * The argv the stream-json wire needs, then the configured options, then what the parent's mode
 * imposes (last, so it wins): a read-only parent's child is refused every writing tool, and any
 * confined parent's child runs Bash in Claude Code's own sandbox, without hooks.
 */
export function claudeArgs(config: SubagentClaudeCodeConfig, mode: SandboxMode = 'danger-full-access'): string[] {
  const args = ['-p', '--output-format', 'stream-json', '--input-format', 'stream-json', '--verbose']
  if (config.model) args.push('--model', config.model)
  if (config.maxTurns > 0) args.push('--max-turns', String(config.maxTurns))
  args.push(...config.args)
  const permissionMode = childPermissionMode(config.permissionMode, mode)
  if (permissionMode) args.push('--permission-mode', permissionMode)
  else if (mode !== 'danger-full-access') args.push('--permission-mode', 'default')
  if (mode === 'read-only') args.push('--disallowedTools', WRITING_TOOLS.join(','))
  const settings = confinedSettings(mode)
  if (settings) args.push('--settings', JSON.stringify(settings))
  return args
}

/** A user message line of the stream-json input. */
export const userLine = (text: string) => ({
  type: 'user',
  message: { role: 'user', content: [{ type: 'text', text }] },
})

type Json = Record<string, any>

/** Token usage of a `result` line (Anthropic usage field names). */
export function usageOf(usage: Json | undefined): TokenUsage | undefined {
  if (!usage || typeof usage !== 'object') return undefined
  const n = (v: unknown) => (typeof v === 'number' && Number.isFinite(v) ? v : 0)
  return {
    input: n(usage.input_tokens),
    output: n(usage.output_tokens),
    cacheRead: n(usage.cache_read_input_tokens),
    cacheWrite: n(usage.cache_creation_input_tokens),
    reasoning: 0,
  }
}

/** How a `result` line ends the child. */
export function outcomeOfResult(line: Json, lastText: string): ChildOutcome {
  const usage = usageOf(line.usage)
  const text = typeof line.result === 'string' ? line.result : lastText
  if (line.subtype === 'success' && line.is_error !== true)
    return { status: 'completed', text, ...(usage ? { usage } : {}) }
  // A `success` subtype flagged `is_error` (the CLI's API errors) is named a plain error, not "success".
  const subtype = typeof line.subtype === 'string' && line.subtype !== 'success' ? line.subtype : 'error'
  const detail =
    typeof line.result === 'string' && line.result
      ? line.result
      : Array.isArray(line.errors) && line.errors.length
        ? String(line.errors[0])
        : `Claude Code ended with ${subtype}`
  return {
    status: 'failed',
    text: lastText,
    error: { code: `CLAUDE_${subtype.toUpperCase().replace(/[^A-Z0-9]+/g, '_')}`, message: detail },
    ...(usage ? { usage } : {}),
  }
}

export function claudeCodeProvider(ctx: Context, config: SubagentClaudeCodeConfig): SubagentProvider {
  return {
    name: config.provider,
    description:
      'a Claude Code run (the `claude` CLI) in this workspace with its own tools and model; give it the whole task',
    async start(request: ProviderStartRequest): Promise<ProviderChild> {
      const { parent, prompt } = request
      let settle!: (outcome: ChildOutcome) => void
      const result = new Promise<ChildOutcome>((resolve) => (settle = resolve))
      let settled = false
      const finish = (outcome: ChildOutcome) => {
        if (settled) return
        settled = true
        settle(outcome)
      }
      let sessionId: string | undefined
      let lastText = ''
      let aborted = false
      let proc: LineProcess
      try {
        proc = await startLineProcess({
          subprocess: ctx.subprocess,
          command: config.command,
          args: claudeArgs(config, request.inherit.mode),
          cwd: parent.cwd,
          env: await childEnv(ctx, config.credentials, config.env, request.inherit),
          killGraceMs: config.closeTimeoutMs,
          onMessage(message) {
            const line = message as Json
            if (!line || typeof line !== 'object') return
            if (line.type === 'system' && line.subtype === 'init' && typeof line.session_id === 'string')
              sessionId = line.session_id
            else if (line.type === 'assistant' && Array.isArray(line.message?.content)) {
              const text = line.message.content
                .filter((b: Json) => b?.type === 'text')
                .map((b: Json) => String(b.text ?? ''))
                .join('')
              if (text) lastText = text
            } else if (line.type === 'result') {
              finish(aborted ? { status: 'cancelled', text: lastText } : outcomeOfResult(line, lastText))
            }
          },
        })
      } catch (error) {
        const code = (error as NodeJS.ErrnoException).code
        throw new Error(
          code === 'ENOENT'
            ? `"${config.command}" was not found (install Claude Code, or set the command in the ${config.provider} row)`
            : (error as Error).message,
        )
      }
      const child = proc
      void child.exited.then(({ code, signal }) => {
        if (aborted) finish({ status: 'cancelled', text: lastText })
        const why = child.stderrTail()
        finish({
          status: 'failed',
          text: lastText,
          error: {
            code: 'CHILD_EXITED',
            message: `claude exited (${signal ?? `code ${code}`}) before its result${why ? `: ${why}` : ''}`,
          },
        })
      })
      child.send(userLine(prompt))
      return {
        get sessionId() {
          return sessionId
        },
        result,
        send(message) {
          // stream-json input takes further user messages; the CLI reads them when it can.
          child.send(userLine(message))
        },
        abort() {
          aborted = true
          child.signal('SIGINT')
          // A run that ignores the interrupt is ended by dispose (SIGTERM, then SIGKILL).
          setTimeout(() => child.signal('SIGTERM'), config.closeTimeoutMs).unref()
        },
        async dispose() {
          await child.close(config.closeTimeoutMs)
        },
      }
    },
  }
}

export function apply(ctx: Context, config: SubagentClaudeCodeConfig): void {
  ctx.subagents.registerProvider(claudeCodeProvider(ctx, config))
}
