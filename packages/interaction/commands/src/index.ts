// @dsh/commands: `ctx.commands`, the plugin-owned registry of human commands (`/name args`).
// UI adapters (TUI, ACP, web, headless) list the commands and dispatch a line the human typed;
// a command runs in-process against the agent and its session, never as a model turn.
import { Service, type Context } from 'cordis'
import Schema from 'schemastery'
import type { Agent } from '@dsh/agent'
import type { Session } from '@dsh/session'

declare module 'cordis' {
  interface Context {
    commands: CommandRegistry
  }
  interface Events {
    /** Observe-only: a command line was dispatched (any outcome). */
    'commands/dispatched'(agent: Agent, result: DispatchResult & { handled: true }): void
    /** A command was registered or removed (menus built once re-read `list()`). */
    'commands/changed'(): void
  }
}

export interface CommandContext {
  agent: Agent
  session: Session
  /** Aborted when the caller gives up on the command. */
  signal?: AbortSignal
}

/** What a command may return: text for the human, or nothing. */
export type CommandOutput = string | void | undefined | { output?: string }

export interface Command {
  /** Lower-case name without the slash: letters, digits, `_` and `-`, starting with a letter. */
  name: string
  /** One line shown in command menus and `/help`. */
  description: string
  /** Argument synopsis, e.g. `[focus]`. */
  usage?: string
  run(args: string, context: CommandContext): CommandOutput | Promise<CommandOutput>
}

export interface CommandInfo {
  name: string
  description: string
  usage?: string
  /** The id of the source that offers it (absent for a registered command). */
  source?: string
}

/**
 * Commands that depend on the agent (e.g. the skills of its working directory): asked each time
 * a menu is built or a line is dispatched for that agent. Synchronous, so a menu never waits.
 */
export interface CommandSource {
  /** Unique among sources; menus may group by it. */
  id: string
  list(agent: Agent): Command[]
}

export type DispatchResult =
  | { handled: false }
  | { handled: true; name: string; ok: true; output?: string }
  | { handled: true; name: string; ok: false; error: { code: 'UNKNOWN_COMMAND' | 'COMMAND_FAILED'; message: string } }

export interface Config {
  /** Register the built-in `/help` command. */
  help: boolean
}

export const Config: Schema<Config> = Schema.object({
  help: Schema.boolean().default(true).description('Register the built-in /help command.'),
})

export const COMMAND_NAME = /^[a-z][a-z0-9_-]*$/
// `/name` alone or followed by whitespace; `/usr/bin/x` or `//x` is not a command line.
const COMMAND_LINE = /^\/([a-z][a-z0-9_-]*)(?:\s+([\s\S]*))?$/

/** The command a line invokes, or undefined when the line is not a command line. */
export function parseCommandLine(text: string): { name: string; args: string } | undefined {
  const match = COMMAND_LINE.exec(text.trim())
  if (!match) return undefined
  return { name: match[1], args: (match[2] ?? '').trim() }
}

export class CommandRegistry extends Service {
  static Config = Config

  // Shared by caller views of the service; mutated in place.
  private readonly table = new Map<string, Command>()
  private readonly sources: CommandSource[] = []
  /** Commands still being loaded (see `pending`). */
  private readonly loading = new Set<Promise<unknown>>()

  constructor(ctx: Context, config: Config = { help: true }) {
    super(ctx, 'commands')
    if (config.help !== false) {
      this.register({
        name: 'help',
        description: 'List the available commands.',
        // Commands still loading (see `pending`) are listed once they arrived.
        run: async (_args, context) => {
          await Promise.all([...this.loading])
          return this.list(context.agent)
            .map((c) => `/${c.name}${c.usage ? ` ${c.usage}` : ''}  ${c.description}`)
            .join('\n')
        },
      })
    }
  }

  /**
   * Registers `command`. Throws for an invalid or already registered name. The registration is
   * an effect of the calling plugin: undone by the returned disposer or when that plugin unloads.
   */
  register(command: Command): () => void {
    if (!command || typeof command.run !== 'function') throw new TypeError('commands.register: a command needs run()')
    if (typeof command.name !== 'string' || !COMMAND_NAME.test(command.name)) {
      throw new TypeError(
        `commands.register: invalid name ${JSON.stringify(command.name)} (lower-case letters, digits, "_" and "-", starting with a letter)`,
      )
    }
    if (typeof command.description !== 'string' || command.description === '') {
      throw new TypeError(`commands.register: /${command.name} needs a description`)
    }
    const table = this.table
    if (table.has(command.name)) throw new Error(`commands.register: /${command.name} is already registered`)
    const entry = { ...command }
    const dispose = this.ctx.effect(() => {
      table.set(entry.name, entry)
      this.ctx.emit('commands/changed')
      return () => {
        if (table.get(entry.name) !== entry) return
        table.delete(entry.name)
        this.ctx.emit('commands/changed')
      }
    }, `commands(/${entry.name})`)
    return () => void dispose()
  }

  /**
   * Commands that are still being loaded (e.g. an MCP server's prompts while it connects): until
   * `until` settles, dispatching a name that is not registered waits for it, then looks again. The
   * provider bounds the wait. Returns a disposer that stops the wait early.
   */
  pending(until: Promise<unknown>): () => void {
    const loading = this.loading
    const wait: Promise<unknown> = until.then(
      () => loading.delete(wait),
      () => loading.delete(wait),
    )
    loading.add(wait)
    return () => void loading.delete(wait)
  }

  /**
   * Adds a source of per-agent commands. A registered command wins over a source's command of the
   * same name, and an earlier source over a later one. Throws for a duplicate id. An effect of
   * the calling plugin, like `register`.
   */
  provide(source: CommandSource): () => void {
    if (!source || typeof source.id !== 'string' || source.id === '' || typeof source.list !== 'function')
      throw new TypeError('commands.provide: expected {id, list(agent)}')
    const sources = this.sources
    if (sources.some((s) => s.id === source.id))
      throw new Error(`commands.provide: source "${source.id}" is already provided`)
    const dispose = this.ctx.effect(() => {
      sources.push(source)
      this.ctx.emit('commands/changed')
      return () => {
        const index = sources.indexOf(source)
        if (index < 0) return
        sources.splice(index, 1)
        this.ctx.emit('commands/changed')
      }
    }, `commands(source ${source.id})`)
    return () => void dispose()
  }

  /**
   * Registered commands, sorted by name; with `agent`, also what the sources offer that agent
   * (a source that throws or offers an invalid name is skipped for that name, with a warning).
   */
  list(agent?: Agent): CommandInfo[] {
    return [...this.resolve(agent).values()]
      .map(({ command, source }) => info(command, source))
      .sort((a, b) => a.name.localeCompare(b.name))
  }

  get(name: string, agent?: Agent): CommandInfo | undefined {
    const command = this.table.get(name)
    if (command) return info(command)
    if (!agent) return undefined
    const found = this.resolve(agent).get(name)
    return found && info(found.command, found.source)
  }

  /** Every command visible to `agent`, by name: registered ones first, then each source's. */
  private resolve(agent: Agent | undefined): Map<string, { command: Command; source?: string }> {
    const out = new Map<string, { command: Command; source?: string }>()
    for (const command of this.table.values()) out.set(command.name, { command })
    if (!agent) return out
    for (const source of this.sources) {
      let offered: Command[]
      try {
        offered = source.list(agent)
      } catch (error) {
        this.ctx.logger('commands').warn('command source %s failed: %s', source.id, (error as Error).message)
        continue
      }
      for (const command of offered) {
        if (!command || typeof command.run !== 'function' || !COMMAND_NAME.test(command.name)) continue
        if (!out.has(command.name)) out.set(command.name, { command, source: source.id })
      }
    }
    return out
  }

  /** Whether `text` is a command line (`/name` or `/name args`), registered or not. */
  isCommandLine(text: string): boolean {
    return parseCommandLine(text) !== undefined
  }

  /**
   * Runs the command `text` names for `agent`, without a model turn. A line that is not a command
   * line is `{handled: false}` (send it to the model); an unknown name or a throwing command is a
   * handled failure with a one-line message for the human.
   */
  async dispatch(agent: Agent, text: string, options: { signal?: AbortSignal } = {}): Promise<DispatchResult> {
    const parsed = parseCommandLine(text)
    if (!parsed) return { handled: false }
    const lookup = () => this.resolve(agent).get(parsed.name)?.command
    let command = lookup()
    if (!command && this.loading.size > 0) {
      await Promise.all([...this.loading])
      command = lookup()
    }
    let result: DispatchResult & { handled: true }
    if (!command) {
      const known = this.list(agent).map((c) => `/${c.name}`)
      result = {
        handled: true,
        name: parsed.name,
        ok: false,
        error: {
          code: 'UNKNOWN_COMMAND',
          message: `unknown command /${parsed.name}; available: ${known.length ? known.join(', ') : '(none)'}`,
        },
      }
    } else {
      try {
        const out = await command.run(parsed.args, {
          agent,
          session: agent.session,
          ...(options.signal ? { signal: options.signal } : {}),
        })
        const output = typeof out === 'string' ? out : out?.output
        result =
          output === undefined
            ? { handled: true, name: parsed.name, ok: true }
            : { handled: true, name: parsed.name, ok: true, output }
      } catch (error) {
        const message = error instanceof Error ? error.message : String(error)
        result = {
          handled: true,
          name: parsed.name,
          ok: false,
          error: { code: 'COMMAND_FAILED', message: `/${parsed.name} failed: ${message}` },
        }
      }
    }
    this.ctx.emit('commands/dispatched', agent, result)
    return result
  }
}

function info(command: Command, source?: string): CommandInfo {
  return {
    name: command.name,
    description: command.description,
    ...(command.usage ? { usage: command.usage } : {}),
    ...(source ? { source } : {}),
  }
}

export default CommandRegistry
