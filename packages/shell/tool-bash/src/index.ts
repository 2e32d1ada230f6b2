// @dsh/tool-bash: the model-facing `bash` tool over the `ctx.shell` executor seam. When `ctx.jobs`
// is mounted (before this row), `run_in_background` runs the command as a job of that registry.
import type { Context } from 'cordis'
import Schema from 'schemastery'
import { ShellError, type ShellLimits, type ShellSpec } from '@dsh/shell'
import type {} from '@dsh/shell-env'
import type {} from '@dsh/jobs'
import type { JsonSchema, ToolOutput } from '@dsh/tools'
import { isSandboxedShell, SANDBOX_ESCALATION_PARAMETER } from '@dsh/sandbox'
import { renderResult } from './render.ts'
import { registerPromptSection } from './prompt.ts'
import { plainService } from '@dsh/plain-service'

export { renderOutput, renderResult } from './render.ts'

export interface BashToolArgs {
  command: string
  description: string
  timeoutMs?: number
  workdir?: string
  /** Only offered when the shell provider confines commands (@dsh/bash-sandbox). */
  sandbox_escalation?: { justification: string }
  /** Only offered when `ctx.jobs` is mounted. */
  run_in_background?: boolean
}

export const RUN_IN_BACKGROUND_PARAMETER: JsonSchema = {
  type: 'boolean',
  description:
    'Run as a background job: the call returns a job id at once and the command keeps running (read it with job_output, stop it with job_kill).',
}

export interface ToolBashConfig {
  output: { headBytes: number; tailBytes: number }
}

export const name = 'tool-bash'
export const inject = ['tools', 'shell']

export const Config: Schema<ToolBashConfig> = Schema.object({
  output: Schema.object({
    headBytes: Schema.natural()
      .default(15_000)
      .description('Bytes of the beginning of long output shown to the model.'),
    tailBytes: Schema.natural().default(15_000).description('Bytes of the end of long output shown to the model.'),
  }).default({ headBytes: 15_000, tailBytes: 15_000 }),
})

/** Slack on top of the executor's maximum timeout for a deadline plugin wrapping the whole call. */
const DEADLINE_SLACK_MS = 30_000

export const parameters: JsonSchema = {
  type: 'object',
  properties: {
    command: { type: 'string', minLength: 1, description: 'The bash command to run.' },
    description: {
      type: 'string',
      description: 'What the command does, in a few words (shown to the user, e.g. "Run the unit tests").',
    },
    timeoutMs: { type: 'integer', minimum: 1, description: 'Timeout in milliseconds.' },
    workdir: {
      type: 'string',
      minLength: 1,
      description:
        'Directory to run in; a relative path resolves against the current working directory. Use this instead of `cd dir && ...`.',
    },
  },
  required: ['command', 'description'],
  additionalProperties: false,
}

export function describeTool(limits: ShellLimits): string {
  return [
    'Run a bash command (`bash -c`); returns stdout and stderr merged in order, then the exit code.',
    '- Each call is a fresh non-interactive shell: cd and exports do not carry over (use workdir); stdin is closed (pass -y, --no-edit), no pager, CI=1.',
    `- Timeout ${limits.defaultTimeoutMs} ms unless you set timeoutMs (at most ${limits.maxTimeoutMs} ms); then the command and its processes are stopped. Processes left in the background (cmd &) stop when it finishes.`,
  ].join('\n')
}

function refusal(code: string, message: string): ToolOutput {
  return { content: `Error [${code}]: ${message}`, isError: true, error: { code, message } }
}

function isShellError(error: unknown): error is ShellError {
  return (
    error instanceof ShellError ||
    (error instanceof Error && error.name === 'ShellError' && typeof (error as ShellError).code === 'string')
  )
}

export { PROMPT_SECTION } from './prompt.ts'

export function apply(ctx: Context, config: ToolBashConfig): void {
  registerPromptSection(ctx)
  // Services are read per call as plain objects: reaching one through the context builds an Error
  // and tracing proxies each time. `shell` is a required inject (a change restarts this plugin);
  // the optional `shellEnv` is looked up again after Cordis reports that it changed.
  const shell = plainService(ctx.shell)
  let shellEnvCache: { value: Context['shellEnv'] | undefined } | undefined
  ctx.on('internal/service', (name) => {
    if (name === 'shellEnv') shellEnvCache = undefined
  })
  const shellEnvNow = () => (shellEnvCache ??= { value: plainService(ctx.get('shellEnv')) ?? undefined }).value
  const { headBytes, tailBytes } = config.output
  const budget = { maxBytes: headBytes + tailBytes, headBytes, tailBytes }
  // A confining shell offers the model a way to ask the user for one unconfined run.
  const sandboxed = isSandboxedShell(ctx.shell)
  // Background runs exist only with a jobs registry (the `jobs` row loads before this one).
  const jobs = ctx.get('jobs')
  const schema: JsonSchema = {
    ...parameters,
    properties: {
      ...(parameters.properties as object),
      ...(sandboxed ? { sandbox_escalation: SANDBOX_ESCALATION_PARAMETER } : {}),
      ...(jobs ? { run_in_background: RUN_IN_BACKGROUND_PARAMETER } : {}),
    },
  }
  ctx.tools.register<BashToolArgs>({
    name: 'bash',
    description: describeTool(ctx.shell.limits),
    parameters: schema,
    concurrencySafe: false,
    timeoutMs: ctx.shell.limits.maxTimeoutMs + DEADLINE_SLACK_MS,
    async execute(args, call) {
      const shellEnv = shellEnvNow()
      const env = shellEnv ? shellEnv.collect({ sessionId: call.sessionId, agentId: call.agentId, cwd: call.cwd }) : {}
      let spec: ShellSpec
      try {
        spec = await shell.resolve({
          command: args.command,
          cwd: call.cwd,
          workdir: args.workdir,
          timeoutMs: args.timeoutMs ?? (args.run_in_background && jobs ? shell.limits.maxTimeoutMs : undefined),
          env,
          output: budget,
          ...(sandboxed
            ? { sessionId: call.sessionId, callId: call.callId, sandboxEscalation: args.sandbox_escalation }
            : {}),
        })
      } catch (error) {
        if (!isShellError(error)) throw error
        if (error.code === 'WORKDIR_NOT_FOUND' || error.code === 'WORKDIR_NOT_DIRECTORY') {
          return refusal(
            error.code,
            `${error.message}. Pass an existing directory as workdir (a relative path resolves against ${call.cwd}).`,
          )
        }
        return refusal(error.code, error.message)
      }
      if (args.run_in_background && jobs) {
        const record = jobs.start({
          kind: 'bash',
          description: args.description,
          command: args.command,
          owner: {
            ...(call.sessionId !== undefined ? { sessionId: call.sessionId } : {}),
            ...(call.agentId !== undefined ? { agentId: call.agentId } : {}),
          },
          run: async (io) => {
            const result = await shell.run(spec, { signal: io.signal, onOutput: (chunk) => io.write(chunk.text) })
            if (result.status === 'exited') return { status: 'exited', exitCode: result.exitCode }
            if (result.status === 'cancelled') return { status: 'killed' }
            if (result.status === 'timeout')
              return {
                status: 'failed',
                error: { code: 'TIMEOUT', message: `stopped after its ${spec.timeoutMs} ms limit` },
              }
            if (result.status === 'signaled')
              return {
                status: 'failed',
                exitCode: null,
                error: { code: 'SIGNALED', message: `ended by ${result.signal}` },
              }
            return {
              status: 'failed',
              error: result.error ?? { code: 'FAILED', message: 'the command could not be started' },
            }
          },
        })
        return {
          content: `Started background job ${record.id} (${args.description}); it runs until it ends, you stop it with job_kill, or its ${spec.timeoutMs} ms limit. Read its output with job_output {"id": "${record.id}"}.`,
          meta: { jobId: record.id },
        }
      }
      const result = await shell.run(spec, { signal: call.signal })
      return renderResult(result, spec)
    },
  })
}
