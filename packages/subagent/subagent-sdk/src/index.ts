// @dsh/subagent-sdk: the `sdk` subagent provider. Each child is a complete dsh runtime in a fresh
// `dsh-jsonrpc-agent` process, driven through @dsh/sdk-client: one session in the parent's cwd, one
// prompt; the turn's result is the child's outcome. The process is closed when the child ends.
// The child is confined like its parent: the parent session's sandbox mode, delegation depth and
// limit travel in its environment (scrubbed of every credential but the named ones), the
// parent's own patch layers as `--patch` arguments (see @dsh/subagent).
import { describeTurnEnd } from '@dsh/session'
import type { Context } from 'cordis'
import Schema from 'schemastery'
import type { Harness as HarnessClient, HarnessSession, PromptResult } from '@dsh/sdk-client'
import {
  childEnv,
  writePolicyLayer,
  type ChildOutcome,
  type ProviderChild,
  type ProviderStartRequest,
  type SubagentProvider,
} from '@dsh/subagent'
import type {} from '@dsh/subagent'
import type {} from '@dsh/subprocess'
import { seamSpawner } from './process.ts'

export const name = 'subagent-sdk'
export const inject = ['subagents', 'subprocess']

export interface SubagentSdkConfig {
  provider: string
  /** argv of the server; empty: the installed `@dsh/sdk-server` bin, else `dsh-jsonrpc-agent` on PATH. */
  command: string[]
  /** Extra arguments (e.g. `--patch FILE`). */
  args: string[]
  env: Record<string, string>
  /** Credentials the child gets (read through ctx.credentials, else this process's environment); every other credential-looking variable is scrubbed. */
  credentials: string[]
  /** Pass the parent's `provider/model` to the child (off: the child's own default model). */
  inheritModel: boolean
  closeTimeoutMs: number
}

export const Config: Schema<Partial<SubagentSdkConfig>, SubagentSdkConfig> = Schema.object({
  provider: Schema.string().default('sdk').description('Name of the provider under ctx.subagents.'),
  command: Schema.array(Schema.string()).default([]).description('The SDK server to run; empty: dsh-jsonrpc-agent.'),
  args: Schema.array(Schema.string()).default([]).description('Extra arguments for the server.'),
  env: Schema.dict(Schema.string()).default({}).description('Extra environment variables for the child.'),
  credentials: Schema.array(Schema.string())
    .default(['DEEPSEEK_API_KEY', 'OPENAI_API_KEY', 'ANTHROPIC_API_KEY', 'OPENROUTER_API_KEY', 'GEMINI_API_KEY'])
    .description('Credentials passed to the child; other credential-looking variables are scrubbed.'),
  inheritModel: Schema.boolean().default(true).description("Run the child on the parent's model."),
  closeTimeoutMs: Schema.natural().default(2000).description('How long a closing child may take before it is killed.'),
})

const describe = (error: unknown) => (error instanceof Error ? error.message : String(error))

export function outcomeOf(result: PromptResult): ChildOutcome {
  const usage = {
    input: result.usage.input,
    output: result.usage.output,
    cacheRead: result.usage.cacheRead ?? 0,
    cacheWrite: result.usage.cacheWrite ?? 0,
    reasoning: result.usage.reasoning ?? 0,
  }
  if (result.reason === 'completed') return { status: 'completed', text: result.text, usage }
  if (result.reason === 'cancelled' || result.reason === 'interrupted')
    return { status: 'cancelled', text: result.text, usage }
  return {
    status: 'failed',
    text: result.text,
    usage,
    error: result.error ?? {
      code: result.reason.toUpperCase(),
      message: describeTurnEnd(result.reason, undefined, "the child's turn"),
    },
  }
}

export function sdkProvider(ctx: Context, config: SubagentSdkConfig): SubagentProvider {
  return {
    name: config.provider,
    description:
      'a complete dsh runtime in its own process (its own composition, session and tools); give it the whole task',
    async start(request: ProviderStartRequest): Promise<ProviderChild> {
      const { parent, prompt } = request
      // Loaded on first use: booting does not need the client.
      const { Harness } = await import('@dsh/sdk-client')
      // Started through ctx.subprocess with the seam's scrubbed environment, then the named
      // credentials, the row's env and the inheritance variables.
      const env = await childEnv(ctx, config.credentials, config.env, request.inherit)
      // Last, the parent's resolved sandbox policy (writable roots, network, protected paths).
      const policyLayer = writePolicyLayer(request.inherit)
      const layers = [...request.inherit.patchFiles, ...(policyLayer ? [policyLayer.file] : [])]
      let harness: HarnessClient
      try {
        harness = await Harness.start({
          ...(config.command.length > 0 ? { bin: config.command } : {}),
          args: [...config.args, ...layers.flatMap((f) => ['--patch', f])],
          cwd: parent.cwd,
          spawnProcess: seamSpawner({ subprocess: ctx.subprocess, env, graceMs: config.closeTimeoutMs }),
          closeTimeoutMs: config.closeTimeoutMs,
        })
      } catch (error) {
        policyLayer?.remove()
        throw error
      }
      void harness.exited.then(() => policyLayer?.remove())
      let session: HarnessSession
      try {
        session = await harness.createSession({
          cwd: parent.cwd,
          ...(config.inheritModel ? { model: `${parent.model.provider}/${parent.model.model}` } : {}),
        })
      } catch (error) {
        await harness.close().catch(() => {})
        throw error
      }
      const child = session
      let stopping = false
      const result = child
        .prompt(prompt)
        .then(
          outcomeOf,
          (error: unknown): ChildOutcome =>
            stopping
              ? { status: 'cancelled', text: '' }
              : { status: 'failed', text: '', error: { code: 'CHILD_EXITED', message: describe(error) } },
        )
      return {
        sessionId: child.id,
        result,
        abort() {
          child.cancel().catch(() => {
            // The server is gone or busy closing: make sure the turn ends anyway.
            stopping = true
            void harness.close().catch(() => {})
          })
        },
        async dispose() {
          stopping = true
          await harness.close().catch(() => {})
        },
      }
    },
  }
}

export function apply(ctx: Context, config: SubagentSdkConfig): void {
  ctx.subagents.registerProvider(sdkProvider(ctx, config))
}
