// @dsh/agent-loop-testkit: boots a real plugin tree (session store, LLM service, tool registry,
// system prompt, agent registry and the agent loop) with a scripted in-process model, for package
// tests that need a working agent without a network or an API key.
import { Context, type Plugin } from 'cordis'
import SessionStore from '@dsh/session'
import LlmService from '@dsh/llm'
import ToolRegistry from '@dsh/tools'
import SystemPrompt from '@dsh/system-prompt'
import AgentRegistry, { type Agent, type TurnResult } from '@dsh/agent'
import * as AgentLoop from '@dsh/agent-loop'
import type { Session } from '@dsh/session'
import { SCRIPTED_MODEL, ScriptedModel, type ScriptEntry } from './scripted-model.ts'

export * from './scripted-model.ts'
export * from './agent-router.ts'

export interface HarnessOptions {
  /** The model's answers, one per request. */
  script?: ScriptEntry[]
  cwd?: string
  maxSteps?: number
  /** Extra plugins mounted after the spine, before the agent is created: `[plugin, config?]`. */
  plugins?: Array<[Plugin, unknown?]>
  /** Config of the system-prompt row. */
  systemPrompt?: Record<string, unknown>
  /** Config of the session store row (`@dsh/session`), e.g. `{ maxToolArgumentChars }`. */
  sessionStore?: Record<string, unknown>
  /** Create the agent on an existing session (resume). */
  session?: Session
}

export interface Harness {
  ctx: Context
  agent: Agent
  session: Session
  model: ScriptedModel
  /** Sends a human message and resolves with the turn result. */
  prompt(text: string): Promise<TurnResult>
  /** Mounts a plugin into the running tree and waits until it is active. */
  mount(plugin: Plugin, config?: unknown): Promise<{ dispose(): Promise<void> }>
  dispose(): Promise<void>
}

async function mount(ctx: Context, plugin: Plugin, config?: unknown) {
  const fiber = ctx.plugin(plugin as Plugin, config as never)
  await fiber
  return fiber
}

export async function createHarness(options: HarnessOptions = {}): Promise<Harness> {
  const ctx = new Context()
  const errors: unknown[] = []
  ctx.on('internal/error' as never, ((error: unknown) => errors.push(error)) as never)
  await mount(ctx, SessionStore, options.sessionStore ?? {})
  await mount(ctx, LlmService)
  await mount(ctx, ToolRegistry)
  await mount(ctx, SystemPrompt, options.systemPrompt ?? {})
  await mount(ctx, AgentRegistry)
  const model = new ScriptedModel(options.script ?? [])
  await mount(ctx, {
    name: 'scripted-model',
    inject: ['llm'],
    apply(c: Context) {
      c.llm.registerAdapter(model)
    },
  })
  await mount(ctx, AgentLoop, { maxSteps: options.maxSteps ?? 100 })
  for (const [plugin, config] of options.plugins ?? []) await mount(ctx, plugin, config)
  const agent = ctx.agents.create({
    cwd: options.cwd ?? process.cwd(),
    model: { provider: model.provider, model: SCRIPTED_MODEL },
    session: options.session,
  })
  return {
    ctx,
    agent,
    session: agent.session,
    model,
    prompt: (text) => agent.send(text),
    mount: async (plugin, config) => {
      const fiber = await mount(ctx, plugin, config)
      return { dispose: () => fiber.dispose() }
    },
    async dispose() {
      await agent.dispose()
      // Disposing the root fiber unwinds the whole tree.
      await (ctx.fiber as unknown as { dispose(): Promise<void> }).dispose?.()
    },
  }
}

/**
 * For a plugin that contributes a system prompt section: the system prompt of one request while
 * `plugin` is mounted and of one after it was unloaded, on a fresh harness (`plugins` are the
 * services it needs). Tests assert on the two texts.
 */
export async function promptAcrossUnload(
  plugin: Plugin,
  options: { cwd: string; plugins?: Array<[Plugin, unknown?]>; config?: unknown },
): Promise<{ loaded: string; unloaded: string }> {
  const harness = await createHarness({
    cwd: options.cwd,
    script: [{ text: 'one' }, { text: 'two' }],
    plugins: options.plugins ?? [],
  })
  try {
    const mounted = await harness.mount(plugin, options.config ?? {})
    await harness.prompt('first')
    await mounted.dispose()
    await harness.prompt('second')
    return { loaded: harness.model.requests[0].system ?? '', unloaded: harness.model.requests[1].system ?? '' }
  } finally {
    await harness.dispose()
  }
}
