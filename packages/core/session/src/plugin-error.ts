// Failures of plugin code that observes the log (session listeners, `session/event` handlers).
// They carry their own code so the agent loop can end a turn as a plugin failure instead of
// mistaking it for a provider error (which would trigger a paid model retry).
import type { Context } from 'cordis'
import { listenersOf, type Listener } from '@dsh/cordis-compat'

export const PLUGIN_ERROR = 'PLUGIN_ERROR'

const messageOf = (error: unknown): string => (error instanceof Error ? error.message : String(error))

/** Plugin code threw while handling something the harness did (`code: 'PLUGIN_ERROR'`). */
export class PluginError extends Error {
  override name = 'PluginError'
  readonly code = PLUGIN_ERROR
  /**
   * @param plugin the failing plugin's name (Cordis fiber name), or a description when unknown
   * @param where what it was handling, e.g. `session listener on "assistant/chunk"`
   */
  constructor(
    readonly plugin: string,
    readonly where: string,
    cause: unknown,
    /** Further failures of the same dispatch (other listeners), if any. */
    readonly others: readonly PluginError[] = [],
  ) {
    const more = others.length
      ? ` (and ${others.length} more: ${others.map((e) => `plugin "${e.plugin}"`).join(', ')})`
      : ''
    super(`plugin "${plugin}" failed in ${where}: ${messageOf(cause)}${more}`, { cause })
  }

  static is(value: unknown): value is PluginError {
    return value instanceof PluginError || (value as { code?: unknown } | null)?.code === PLUGIN_ERROR
  }
}

/** One error for a dispatch: the first failure, naming the rest. */
export function combinePluginErrors(errors: readonly PluginError[]): PluginError | undefined {
  if (errors.length <= 1) return errors[0]
  const [first, ...rest] = errors
  return new PluginError(first.plugin, first.where, first.cause, rest)
}

/**
 * The listeners of `name` with the plugin that registered each one (Cordis' listener table, read
 * by @dsh/cordis-compat); `undefined` when that table is not readable, so callers fall back to
 * the plain dispatch and lose only the plugin names.
 */
const hooksOf = (ctx: Context, name: string): Listener[] | undefined => listenersOf(ctx, name)

/**
 * `ctx.emit(name, ...args)` that reaches every listener even when one throws, then throws one
 * `PluginError` naming the plugin(s) that failed. Listeners see no `this` (as with `emit` when the
 * first argument is not an object).
 */
export function emitNamed(ctx: Context, name: string, where: string, args: unknown[]): void {
  const hooks = hooksOf(ctx, name)
  if (!hooks) {
    try {
      ;(ctx.emit as (...a: unknown[]) => void)(name, ...args)
    } catch (error) {
      throw PluginError.is(error) ? error : new PluginError(`a "${name}" listener`, where, error)
    }
    return
  }
  const errors: PluginError[] = []
  for (const hook of hooks) {
    try {
      Reflect.apply(hook.callback, null, args)
    } catch (error) {
      errors.push(
        PluginError.is(error) && error instanceof PluginError ? error : new PluginError(hook.plugin, where, error),
      )
    }
  }
  const combined = combinePluginErrors(errors)
  if (combined) throw combined
}

/**
 * `ctx.serial(name, ...args)` (listeners awaited in order, the first non-nullish result ends the
 * dispatch) where a throwing listener becomes a `PluginError` naming its plugin.
 */
export async function serialNamed(ctx: Context, name: string, where: string, args: unknown[]): Promise<unknown> {
  const hooks = hooksOf(ctx, name)
  if (!hooks) {
    try {
      return await (ctx.serial as (...a: unknown[]) => Promise<unknown>)(name, ...args)
    } catch (error) {
      throw PluginError.is(error) ? error : new PluginError(`a "${name}" listener`, where, error)
    }
  }
  for (const hook of hooks) {
    let result: unknown
    try {
      result = await Reflect.apply(hook.callback, null, args)
    } catch (error) {
      throw error instanceof PluginError ? error : new PluginError(hook.plugin, where, error)
    }
    if (result !== null && result !== false && result !== undefined) return result
  }
  return undefined
}
