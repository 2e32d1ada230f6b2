// The tool registry service (`ctx.tools`) and its execution pipeline.
//
// Per call: parse JSON -> resolve tool -> validate arguments -> `tools/pre-execute` -> guards ->
// `tools/execute` (around the tool body) -> `tools/post-execute` -> `finalizeContent` ->
// `tools/result` (observe only). Bad model input and tool failures become error results; nothing
// here throws into the caller except misuse of the registration API.
import { type Context, Service } from 'cordis'
import Schema from 'schemastery'
import { ScopedRegistry, standingScope } from '@dsh/scope'
import type { ToolSchema } from '@dsh/llm'
import { SchemaCompiler, type ArgumentValidator } from './schema.ts'
import { checkOutput, errorOutput, messageOf, toPayload } from './results.ts'
import {
  cancelled,
  cancelledBeforeStart,
  catalogue,
  compare,
  denied,
  dispatch,
  internalError,
  isSafe,
  schemaOf,
  summaryOf,
  toolError,
  visible,
} from './call-outcomes.ts'
import type {
  ExecuteContext,
  ExecutePayload,
  PostExecutePayload,
  PreExecutePayload,
  ResolvedCall,
  ToolCallContext,
  ToolCallRequest,
  ToolDefinition,
  ToolDeferral,
  ToolDenial,
  ToolGuard,
  ToolMode,
  ToolOutput,
  ToolResultPayload,
} from './types.ts'
import { plainService } from '@dsh/plain-service'

export const TOOL_NAME_PATTERN = /^[a-zA-Z0-9_-]{1,64}$/

interface Entry {
  def: ToolDefinition
  /** The scope it was registered in (undefined: global). */
  scope?: string
  validate: ArgumentValidator
  /** False once the registration is disposed; a call prepared earlier then answers UNKNOWN_TOOL. */
  live: boolean
}

interface GuardEntry {
  guard: ToolGuard
}

/** The outcome of the synchronous front half (parse, resolve, validate) of one call. */
type Prepared =
  | { kind: 'done'; call: ToolCallRequest; output: ToolOutput; tool?: ToolDefinition }
  | { kind: 'ready'; call: ToolCallRequest; entry: Entry; args: unknown; safe: boolean }

export interface ToolRegistryConfig {
  mode: ToolMode
  maxParallel: number
}

export class ToolRegistry extends Service {
  static Config: Schema<ToolRegistryConfig> = Schema.object({
    mode: Schema.union(['native', 'code', 'both'] as const)
      .default('native')
      .description('How tools are presented to the model: native function calling, Code Mode, or both.'),
    maxParallel: Schema.natural()
      .min(1)
      .default(8)
      .description('Upper bound of concurrency-safe calls running at once.'),
  })

  /** The configured default presentation mode. */
  readonly mode: ToolMode
  readonly maxParallel: number

  private readonly entries = new ScopedRegistry<Entry>({ key: (entry) => entry.def.name, label: 'tool' })
  private readonly guards: GuardEntry[] = []
  private readonly presentation = new ScopedRegistry<{ scope: string; mode: ToolMode }>({
    key: () => 'mode',
    label: 'tool presentation',
  })
  private readonly restrictions = new ScopedRegistry<{ allow: (name: string) => boolean }>({
    key: () => 'restriction',
    label: 'tool restriction',
  })
  private readonly compiler = new SchemaCompiler()
  /** The deferral policy in effect (at most one; mutated in place, shared by caller views). */
  private readonly deferrals: ToolDeferral[] = []

  /**
   * The events service as its plain object: `this.ctx.waterfall(...)` reaches it through a Cordis
   * accessor that builds two Errors and a few proxies per read, four times per tool call. Events
   * is the root's built-in service (it never changes), and dispatching through it directly passes
   * the same arguments to the same listeners.
   */
  private readonly events: Context['events']

  constructor(ctx: Context, config: ToolRegistryConfig) {
    super(ctx, 'tools')
    this.mode = config.mode
    this.maxParallel = config.maxParallel
    this.events = plainService(ctx.events)
  }

  /**
   * Adds a tool. Throws (TypeError) on a bad name or schema, and on a duplicate name in the same
   * scope. The registration is undone by the returned disposer or when the calling plugin unloads.
   * A definition without `scope` registered from a context with a standing scope (`@dsh/scope`
   * `withStandingScope`, e.g. a row of an agent preset) goes into that scope.
   */
  register<A>(def: ToolDefinition<A>): () => void {
    if (def === null || typeof def !== 'object')
      throw new TypeError('tools.register: expected a tool definition object')
    if (typeof def.name !== 'string' || !TOOL_NAME_PATTERN.test(def.name)) {
      throw new TypeError(
        `tools.register: invalid tool name ${JSON.stringify(def.name)} (must match ${TOOL_NAME_PATTERN})`,
      )
    }
    if (typeof def.description !== 'string') throw new TypeError(`tool "${def.name}": description must be a string`)
    if (typeof def.execute !== 'function') throw new TypeError(`tool "${def.name}": execute must be a function`)
    if (def.scope !== undefined && (typeof def.scope !== 'string' || def.scope === '')) {
      throw new TypeError(`tool "${def.name}": scope must be a non-empty string when given`)
    }
    const scope = def.scope ?? standingScope(this.ctx)
    const entry: Entry = {
      def: def as ToolDefinition,
      validate: this.compiler.compile(def.name, def.parameters),
      live: true,
      ...(scope !== undefined ? { scope } : {}),
    }
    const entries = this.entries
    const dispose = this.ctx.effect(() => {
      const remove = entries.register(entry, { scope })
      return () => {
        entry.live = false
        remove()
      }
    }, `tool:${def.name}`)
    return () => void dispose()
  }

  /**
   * Adds a guard: a monotonic check after `tools/pre-execute` that can only deny. Guards run in
   * registration order; the first denial wins. A guard that throws denies the call (fail closed).
   */
  registerGuard(guard: ToolGuard): () => void {
    if (guard === null || typeof guard !== 'object' || typeof guard.check !== 'function') {
      throw new TypeError('tools.registerGuard: expected {name, check}')
    }
    if (typeof guard.name !== 'string' || guard.name === '')
      throw new TypeError('tools.registerGuard: name must be a non-empty string')
    if (this.guards.some((entry) => entry.guard.name === guard.name)) {
      throw new TypeError(`tools.registerGuard: guard "${guard.name}" is already registered`)
    }
    const guards = this.guards
    const dispose = this.ctx.effect(() => {
      const entry: GuardEntry = { guard }
      guards.push(entry)
      return () => {
        const index = guards.indexOf(entry)
        if (index >= 0) guards.splice(index, 1)
      }
    }, `tool-guard:${guard.name}`)
    return () => void dispose()
  }

  /** Tools visible from `scope` (scoped ones shadow global ones), sorted by name. */
  list(scope?: string): ToolDefinition[] {
    const allowed = this.allowed(scope)
    return this.entries
      .resolve(scope)
      .filter((entry) => entry.scope !== undefined || allowed(entry.def.name))
      .map((entry) => entry.def)
      .sort((a, b) => compare(a.name, b.name))
  }

  get(name: string, scope?: string): ToolDefinition | undefined {
    return this.lookup(name, scope)?.def
  }

  /**
   * Limits the global tools visible from one agent scope to the names `allow` accepts (an agent
   * preset's tool set); tools registered in the scope itself always stay. A hidden tool is absent
   * from `list`/`schemas` and answers `UNKNOWN_TOOL` there.
   * One restriction per scope; undone by the disposer or when the calling plugin unloads.
   */
  restrict(scope: string, allow: (name: string) => boolean): () => void {
    if (typeof scope !== 'string' || scope === '')
      throw new TypeError('tools.restrict: scope must be a non-empty string')
    if (typeof allow !== 'function') throw new TypeError('tools.restrict: allow must be a function')
    const restrictions = this.restrictions
    const dispose = this.ctx.effect(() => restrictions.register({ allow }, { scope }), `tool-restriction:${scope}`)
    return () => void dispose()
  }

  private allowed(scope: string | undefined): (name: string) => boolean {
    return (scope === undefined ? undefined : this.restrictions.get('restriction', scope)?.allow) ?? (() => true)
  }

  private lookup(name: string, scope: string | undefined): Entry | undefined {
    const entry = this.entries.get(name, scope)
    return entry && (entry.scope !== undefined || this.allowed(scope)(name)) ? entry : undefined
  }

  /**
   * Model-facing schemas visible from `scope` under its presentation mode (see `presented`),
   * sorted by name so the request prefix stays cacheable. With a deferral policy and an agent
   * scope, the tools deferred there are left out and listed one line each (`- name: summary`)
   * after the loader tool's description; the loader itself is left out while nothing is deferred.
   */
  schemas(scope?: string): ToolSchema[] {
    const presented = this.presented(scope)
    const policy = this.deferrals[0]
    if (!policy) return presented.map(schemaOf)
    const held = new Set(scope === undefined ? [] : this.deferredAmong(presented, policy, scope))
    const schemas: ToolSchema[] = []
    for (const def of presented) {
      if (def.name === policy.loader) {
        if (held.size > 0) schemas.push({ ...schemaOf(def), description: catalogue(def.description, [...held]) })
      } else if (!held.has(def)) schemas.push(schemaOf(def))
    }
    return schemas
  }

  /**
   * The tools deferred in `scope` right now (sent as catalogue lines, not schemas), sorted by
   * name; empty without a deferral policy or an agent scope.
   */
  deferred(scope?: string): ToolDefinition[] {
    const policy = this.deferrals[0]
    if (!policy || scope === undefined) return []
    return this.deferredAmong(this.presented(scope), policy, scope)
  }

  /** The catalogue line's text of a tool: its `summary`, else the first sentence of its description. */
  summary(def: Pick<ToolDefinition, 'description' | 'summary'>): string {
    return summaryOf(def)
  }

  /**
   * Sets the deferral policy (see `ToolDeferral`). One at a time: a second one throws. Undone by
   * the disposer or when the calling plugin unloads.
   */
  setDeferral(policy: ToolDeferral): () => void {
    if (policy === null || typeof policy !== 'object' || typeof policy.deferred !== 'function')
      throw new TypeError('tools.setDeferral: expected {loader, deferred}')
    if (typeof policy.loader !== 'string' || !TOOL_NAME_PATTERN.test(policy.loader))
      throw new TypeError(`tools.setDeferral: invalid loader name ${JSON.stringify(policy.loader)}`)
    if (this.deferrals.length > 0) throw new TypeError('tools.setDeferral: a deferral policy is already set')
    const deferrals = this.deferrals
    const dispose = this.ctx.effect(() => {
      deferrals.push(policy)
      return () => {
        const index = deferrals.indexOf(policy)
        if (index >= 0) deferrals.splice(index, 1)
      }
    }, 'tool-deferral')
    return () => void dispose()
  }

  /** Whether `def`, as resolved from `scope`, is deferred there by `policy`. */
  private isDeferred(policy: ToolDeferral, def: ToolDefinition, scope: string): boolean {
    if (def.name === policy.loader || def.codeEntry === true) return false
    // A scope's own tools (a preset's, plan mode's exit_plan_mode) are always sent in full.
    if (this.entries.get(def.name, scope)?.scope !== undefined) return false
    try {
      return policy.deferred(def, scope) === true
    } catch (error) {
      this.ctx.logger('tools').warn('the deferral policy threw for tool "%s": %s', def.name, messageOf(error))
      return false
    }
  }

  private deferredAmong(presented: ToolDefinition[], policy: ToolDeferral, scope: string): ToolDefinition[] {
    // Nothing is deferred when the loader is not reachable from this scope (hidden by a preset).
    if (!presented.some((def) => def.name === policy.loader)) return []
    return presented.filter((def) => this.isDeferred(policy, def, scope))
  }

  /**
   * The tools the model may call directly from `scope`: in `native` mode every tool except Code
   * Mode entry tools, in `code` mode only entry tools, in `both` all of them. Sorted by name.
   */
  presented(scope?: string): ToolDefinition[] {
    const mode = this.presentAs(scope)
    return this.list(scope).filter((def) => visible(def, mode, 'model'))
  }

  /** The tools a Code Mode program may call from `scope`: every tool except entry tools. Sorted by name. */
  programTools(scope?: string): ToolDefinition[] {
    return this.list(scope).filter((def) => def.codeEntry !== true)
  }

  /**
   * The presentation mode for `scope`: the scope's override if one is set, else the configured
   * `mode`. `schemas()`/`presented()` and call resolution follow it.
   */
  presentAs(scope?: string): ToolMode {
    if (scope === undefined) return this.mode
    return this.presentation.get('mode', scope)?.mode ?? this.mode
  }

  /** Overrides the presentation mode for one agent scope; undone by the disposer or plugin unload. */
  setPresentAs(scope: string, mode: ToolMode): () => void {
    if (mode !== 'native' && mode !== 'code' && mode !== 'both')
      throw new TypeError(`tools.setPresentAs: invalid mode ${JSON.stringify(mode)}`)
    const presentation = this.presentation
    const dispose = this.ctx.effect(
      () => presentation.register({ scope, mode }, { scope }),
      `tool-presentation:${scope}`,
    )
    return () => void dispose()
  }

  /** Runs one call through the whole pipeline. Never rejects for bad input or tool failures. */
  async execute(call: ToolCallRequest, context: ExecuteContext): Promise<ToolResultPayload> {
    return this.run(this.prepare(call, context), context)
  }

  /**
   * Runs the calls of one step and returns their results in call order. Each maximal run of
   * consecutive concurrency-safe calls executes in parallel (at most `maxParallel` at once); any
   * other call runs alone, after everything before it has finished. Calls rejected before
   * dispatch (bad JSON, unknown tool, invalid arguments) count as concurrency-safe.
   */
  /**
   * Runs one step's calls: consecutive concurrency-safe calls in parallel (up to maxParallel),
   * others alone, in order. `onResult` sees each result in call order as soon as it and every
   * earlier call are done, so a caller can log results while later calls still run, and the log
   * order stays deterministic.
   */
  async executeAll(
    calls: readonly ToolCallRequest[],
    context: ExecuteContext,
    onResult?: (result: ToolResultPayload, index: number) => void,
  ): Promise<ToolResultPayload[]> {
    const prepared = calls.map((call) => this.prepare(call, context))
    const results: ToolResultPayload[] = new Array(calls.length)
    let delivered = 0
    const settle = (i: number, result: ToolResultPayload) => {
      results[i] = result
      while (delivered < results.length && results[delivered] !== undefined) {
        onResult?.(results[delivered], delivered)
        delivered++
      }
    }
    let index = 0
    while (index < prepared.length) {
      const current = prepared[index]
      if (current.kind === 'ready' && !current.safe) {
        settle(index, await this.run(current, context))
        index++
        continue
      }
      let end = index
      while (end < prepared.length && (prepared[end].kind === 'done' || (prepared[end] as { safe: boolean }).safe))
        end++
      await this.pool(index, end, async (i) => {
        settle(i, await this.run(prepared[i], context))
      })
      index = end
    }
    return results
  }

  private async pool(start: number, end: number, work: (index: number) => Promise<void>): Promise<void> {
    let next = start
    const worker = async () => {
      while (next < end) await work(next++)
    }
    await Promise.all(Array.from({ length: Math.min(this.maxParallel, end - start) }, worker))
  }

  private prepare(call: ToolCallRequest, context: ExecuteContext): Prepared {
    const name = String(call.name)
    const raw = typeof call.arguments === 'string' ? call.arguments : ''
    let args: unknown
    if (raw.trim() === '') {
      args = {}
    } else {
      try {
        args = JSON.parse(raw)
      } catch (error) {
        return {
          kind: 'done',
          call,
          output: errorOutput(
            'INVALID_JSON',
            `the arguments for tool "${name}" are not valid JSON (${messageOf(error)}). ` +
              'Call the tool again with its arguments as one JSON object matching its parameters schema.',
            `invalid arguments JSON: ${messageOf(error)}`,
          ),
        }
      }
    }
    const entry = this.lookup(name, context.scope)
    if (!entry || !visible(entry.def, this.presentAs(context.scope), context.origin ?? 'model')) {
      return { kind: 'done', call, output: this.unknownTool(name, context) }
    }
    // A deferred tool called directly runs like any other; the policy may load its schema now.
    const loaded = this.calledDeferred(entry.def, context)
    const problems = entry.validate(args)
    if (problems) {
      return {
        kind: 'done',
        call,
        tool: entry.def,
        output: errorOutput(
          'INVALID_ARGUMENTS',
          `the arguments for tool "${name}" do not match its parameters schema:\n` +
            problems.map((line) => `- ${line}`).join('\n') +
            '\nFix these and call the tool again.' +
            (loaded ? ' Its full schema is now in your tool list.' : ''),
          problems.join('; '),
        ),
      }
    }
    return { kind: 'ready', call, entry, args, safe: isSafe(entry.def, args) }
  }

  /** Tells the policy about a direct model call to a tool deferred in the call's scope; true if it loaded it. */
  private calledDeferred(def: ToolDefinition, context: ExecuteContext): boolean {
    const policy = this.deferrals[0]
    const scope = context.scope
    if (!policy?.calledDeferred || scope === undefined || (context.origin ?? 'model') !== 'model') return false
    if (!this.isDeferred(policy, def, scope)) return false
    try {
      policy.calledDeferred(def, context)
    } catch (error) {
      this.ctx.logger('tools').warn('the deferral policy failed to load tool "%s": %s', def.name, messageOf(error))
      return false
    }
    return !this.isDeferred(policy, def, scope)
  }

  private unknownTool(name: string, context: ExecuteContext): ToolOutput {
    const callable = context.origin === 'code' ? this.programTools(context.scope) : this.presented(context.scope)
    const names = callable.map((def) => def.name)
    const available = names.length > 0 ? `Available tools: ${names.join(', ')}.` : 'No tools are available here.'
    return errorOutput(
      'UNKNOWN_TOOL',
      `there is no tool named "${name}". ${available}${names.length > 0 ? ' Use one of these exact names.' : ''}`,
      `unknown tool "${name}"`,
    )
  }

  private async run(prepared: Prepared, context: ExecuteContext): Promise<ToolResultPayload> {
    let output: ToolOutput
    let tool: ToolDefinition | undefined
    if (prepared.kind === 'done') {
      output = prepared.output
      tool = prepared.tool
    } else if (!prepared.entry.live) {
      output = this.unknownTool(prepared.call.name, context)
    } else {
      tool = prepared.entry.def
      output = await this.pipeline(prepared.call, prepared.entry.def, prepared.args, context)
    }
    const payload = toPayload(prepared.call, output)
    try {
      this.events.emit('tools/result', payload, { call: prepared.call, context, ...(tool ? { tool } : {}) })
    } catch (error) {
      this.ctx.logger('tools').warn('a tools/result listener threw: %s', messageOf(error))
    }
    return payload
  }

  private async pipeline(
    call: ToolCallRequest,
    tool: ToolDefinition,
    args: unknown,
    context: ExecuteContext,
  ): Promise<ToolOutput> {
    const controller = new AbortController()
    const outer = context.signal
    const follow = () => controller.abort(outer?.reason)
    if (outer?.aborted) follow()
    else outer?.addEventListener('abort', follow, { once: true })
    const callContext: ToolCallContext = {
      callId: call.callId,
      name: tool.name,
      ...(context.sessionId !== undefined ? { sessionId: context.sessionId } : {}),
      ...(context.agentId !== undefined ? { agentId: context.agentId } : {}),
      ...(context.scope !== undefined ? { scope: context.scope } : {}),
      cwd: context.cwd,
      ...(context.turn !== undefined ? { turn: context.turn } : {}),
      ...(context.step !== undefined ? { step: context.step } : {}),
      ...(context.origin !== undefined ? { origin: context.origin } : {}),
      ...(context.parentCallId !== undefined ? { parentCallId: context.parentCallId } : {}),
      signal: controller.signal,
    }
    const signal = controller.signal
    try {
      if (signal.aborted) return cancelledBeforeStart(tool.name, signal)

      const pre: PreExecutePayload = { call, args, tool, context: callContext }
      try {
        await this.events.waterfall('tools/pre-execute', pre, async () => {})
      } catch (error) {
        return internalError(tool.name, 'tools/pre-execute', error, false)
      }
      if (pre.decision) return denied(tool.name, pre.decision)

      const resolved: ResolvedCall = { call, args: pre.args, tool, context: callContext }
      for (const { guard } of this.guards.slice()) {
        if (guard.scope !== undefined && guard.scope !== context.scope) continue
        let verdict: ToolDenial | { deny?: undefined } | void
        try {
          verdict = await guard.check(resolved)
        } catch (error) {
          return denied(tool.name, {
            deny: `guard "${guard.name}" failed (${messageOf(error)}), so the call was refused`,
          })
        }
        if (verdict && typeof verdict.deny === 'string') return denied(tool.name, verdict as ToolDenial)
      }
      if (signal.aborted) return cancelledBeforeStart(tool.name, signal)

      const exec: ExecutePayload = {
        call,
        args: pre.args,
        tool,
        context: callContext,
        abort: (reason) => controller.abort(reason === undefined ? undefined : new Error(reason)),
      }
      let output: ToolOutput
      try {
        output = await this.events.waterfall('tools/execute', exec, () => dispatch(tool, exec.args, callContext))
      } catch (error) {
        output = signal.aborted ? cancelled(tool.name, signal) : toolError(tool.name, error)
      }
      const malformed = checkOutput(output)
      if (malformed) output = errorOutput('TOOL_ERROR', `tool "${tool.name}" returned an invalid result: ${malformed}.`)

      const post: PostExecutePayload = { call, args: exec.args, tool, context: callContext, output }
      try {
        await this.events.waterfall('tools/post-execute', post, async () => {})
      } catch (error) {
        return internalError(tool.name, 'tools/post-execute', error, true)
      }
      output = post.output
      if (tool.finalizeContent) {
        try {
          output = tool.finalizeContent(output, callContext)
        } catch (error) {
          return toolError(tool.name, error)
        }
      }
      const broken = checkOutput(output)
      if (broken) return internalError(tool.name, 'result processing', new Error(broken), true)
      return output
    } finally {
      outer?.removeEventListener('abort', follow)
    }
  }
}
