// @dsh/tool-terminal: six model-facing tools over `ctx.terminals`: terminal_open, terminal_send,
// terminal_read, terminal_signal, terminal_close, terminal_list. Every call acts for the exact
// agent that makes it, so an agent cannot reach another agent's terminal even with its id.
import type { Context } from 'cordis'
import Schema from 'schemastery'
import type {} from '@dsh/agent'
import { TerminalError, type TerminalOwner, type TerminalRead, type TerminalRecord } from '@dsh/terminal'
import type { ToolCallContext, ToolOutput } from '@dsh/tools'
import { toolError as fail } from '@dsh/tools'
import { contributeSection } from '@dsh/system-prompt'

export const name = 'tool-terminal'
export const inject = ['tools', 'terminals']

export interface ToolTerminalConfig {
  /** How long terminal_send and terminal_read wait for output to settle by default, in ms. */
  waitMs: number
  /** Most output characters one result returns (the newest ones). */
  maxOutputChars: number
}

export const Config: Schema<Partial<ToolTerminalConfig>, ToolTerminalConfig> = Schema.object({
  waitMs: Schema.natural().default(2000).description('Default wait for output to settle after sending input, in ms.'),
  maxOutputChars: Schema.natural().min(1000).default(20_000).description('Most output characters one result returns.'),
})

export const PROMPT_SECTION = {
  id: 'tool:terminal',
  order: 346,
  // Left out while all of these tools are deferred (@dsh/tool-deferral).
  tools: ['terminal_open', 'terminal_send', 'terminal_read', 'terminal_signal', 'terminal_close', 'terminal_list'],
  text: [
    'Terminals (terminal_open, terminal_send, terminal_read, terminal_signal, terminal_close, terminal_list):',
    '- Use a terminal for interactive programs (a REPL, a debugger, a prompt that asks questions) or when working directory and environment must persist between commands; use bash for one-off commands.',
    '- terminal_send types input (Enter is added unless enter: false) and returns the output that follows; use terminal_read {since: next} to wait for more, terminal_signal SIGINT to interrupt, and close terminals you are done with.',
  ].join('\n'),
}

const SIGNALS = ['SIGINT', 'SIGTERM', 'SIGKILL', 'SIGQUIT', 'SIGHUP', 'SIGTSTP', 'SIGCONT'] as const

function state(record: Pick<TerminalRecord, 'status' | 'exitCode' | 'signal'>): string {
  if (record.status === 'running') return 'running'
  return record.signal ? `exited (${record.signal})` : `exited with code ${record.exitCode ?? '?'}`
}

export function apply(ctx: Context, config: ToolTerminalConfig): void {
  contributeSection(ctx, PROMPT_SECTION)
  const ownerOf = (call: ToolCallContext): TerminalOwner | undefined =>
    call.agentId !== undefined
      ? { agentId: call.agentId, ...(call.sessionId !== undefined ? { sessionId: call.sessionId } : {}) }
      : undefined
  const noAgent = () => fail('NO_AGENT', 'terminals belong to an agent, and this call is not attached to one')
  const refused = (error: unknown): ToolOutput => {
    if (TerminalError.is(error)) return fail(error.code, error.message)
    throw error
  }
  const render = (out: TerminalRead, record: TerminalRecord): ToolOutput => {
    let text = out.text
    let cut = 0
    if (text.length > config.maxOutputChars) {
      cut = text.length - config.maxOutputChars
      text = text.slice(cut)
    }
    const notes = [
      ...(out.dropped > 0 ? [`${out.dropped} earlier characters were dropped`] : []),
      ...(cut > 0 ? [`the first ${cut} characters of this range are not shown`] : []),
    ]
    const head = `Terminal ${out.id} (${state(record)}); output ${out.from}-${out.to}, next: ${out.to}${notes.length ? `; ${notes.join('; ')}` : ''}.`
    return {
      content: `${head}\n${text === '' ? '(no new output)' : text}`,
      meta: { id: out.id, status: record.status, next: out.to },
    }
  }

  ctx.tools.register<{ command?: string[]; workdir?: string }>({
    name: 'terminal_open',
    description:
      'Open a persistent terminal: an interactive shell by default, or the given program (e.g. ["python3", "-i"]). Returns its id and the first output.',
    parameters: {
      type: 'object',
      properties: {
        command: {
          type: 'array',
          items: { type: 'string' },
          minItems: 1,
          description: 'Program and arguments; default: an interactive bash.',
        },
        workdir: { type: 'string', description: 'Directory to start in (default: the working directory).' },
      },
      additionalProperties: false,
    },
    async execute(args, call) {
      const owner = ownerOf(call)
      if (!owner) return noAgent()
      try {
        const { isAbsolute, resolve } = await import('node:path')
        const cwd = args.workdir
          ? isAbsolute(args.workdir)
            ? args.workdir
            : resolve(call.cwd, args.workdir)
          : call.cwd
        const record = await ctx.terminals.open({ owner, cwd, ...(args.command ? { command: args.command } : {}) })
        const out = await ctx.terminals.read(record.id, owner, { since: 0, waitMs: config.waitMs, quietMs: 200 })
        const rendered = render(out, ctx.terminals.get(record.id, owner))
        return {
          ...rendered,
          content: `Opened terminal ${record.id} (${record.command.join(' ')}).\n${rendered.content}`,
        }
      } catch (error) {
        return refused(error)
      }
    },
  })

  ctx.tools.register<{ id: string; input: string; enter?: boolean; wait_ms?: number }>({
    name: 'terminal_send',
    description:
      'Type input into a terminal (Enter is pressed after it unless enter is false) and return the output that follows, once it settles.',
    parameters: {
      type: 'object',
      properties: {
        id: { type: 'string', description: 'Terminal id (e.g. "term-1").' },
        input: { type: 'string', description: 'Text to type.' },
        enter: { type: 'boolean', description: 'Press Enter after the input (default true).' },
        wait_ms: {
          type: 'integer',
          minimum: 0,
          maximum: 60000,
          description: 'How long to wait for output (default from config).',
        },
      },
      required: ['id', 'input'],
      additionalProperties: false,
    },
    async execute(args, call) {
      const owner = ownerOf(call)
      if (!owner) return noAgent()
      try {
        const since = (await ctx.terminals.read(args.id, owner)).to
        ctx.terminals.write(args.id, owner, args.enter === false ? args.input : `${args.input}\n`)
        const out = await ctx.terminals.read(args.id, owner, {
          since,
          waitMs: args.wait_ms ?? config.waitMs,
          quietMs: 200,
        })
        return render(out, ctx.terminals.get(args.id, owner))
      } catch (error) {
        return refused(error)
      }
    },
  })

  ctx.tools.register<{ id: string; since?: number; wait_ms?: number }>({
    name: 'terminal_read',
    description:
      "Read a terminal's output from cursor `since` (the `next` of an earlier result; default: what is retained), optionally waiting for new output.",
    parameters: {
      type: 'object',
      properties: {
        id: { type: 'string', description: 'Terminal id.' },
        since: { type: 'integer', minimum: 0, description: 'Cursor to read from.' },
        wait_ms: {
          type: 'integer',
          minimum: 0,
          maximum: 60000,
          description: 'Wait up to this long for new output (default 0).',
        },
      },
      required: ['id'],
      additionalProperties: false,
    },
    async execute(args, call) {
      const owner = ownerOf(call)
      if (!owner) return noAgent()
      try {
        const out = await ctx.terminals.read(args.id, owner, {
          ...(args.since !== undefined ? { since: args.since } : {}),
          waitMs: args.wait_ms ?? 0,
          quietMs: 200,
        })
        return render(out, ctx.terminals.get(args.id, owner))
      } catch (error) {
        return refused(error)
      }
    },
  })

  ctx.tools.register<{ id: string; signal: (typeof SIGNALS)[number] }>({
    name: 'terminal_signal',
    description:
      'Send a signal to the program in a terminal: SIGINT is Ctrl-C (interrupts the running command), SIGTERM/SIGKILL end it.',
    parameters: {
      type: 'object',
      properties: {
        id: { type: 'string', description: 'Terminal id.' },
        signal: { type: 'string', enum: [...SIGNALS] },
      },
      required: ['id', 'signal'],
      additionalProperties: false,
    },
    execute(args, call) {
      const owner = ownerOf(call)
      if (!owner) return noAgent()
      try {
        ctx.terminals.signal(args.id, owner, args.signal)
        return {
          content: `Sent ${args.signal} to terminal ${args.id}. Read it to see the effect.`,
          meta: { id: args.id },
        }
      } catch (error) {
        return refused(error)
      }
    },
  })

  ctx.tools.register<{ id: string }>({
    name: 'terminal_close',
    description: 'Close a terminal and stop everything running in it.',
    parameters: {
      type: 'object',
      properties: { id: { type: 'string', description: 'Terminal id.' } },
      required: ['id'],
      additionalProperties: false,
    },
    async execute(args, call) {
      const owner = ownerOf(call)
      if (!owner) return noAgent()
      try {
        const record = await ctx.terminals.close(args.id, owner)
        return { content: `Closed terminal ${record.id} (${state(record)}).`, meta: { id: record.id } }
      } catch (error) {
        return refused(error)
      }
    },
  })

  ctx.tools.register<Record<string, never>>({
    name: 'terminal_list',
    description: 'List your open terminals.',
    parameters: { type: 'object', properties: {}, additionalProperties: false },
    concurrencySafe: true,
    execute(_args, call) {
      const owner = ownerOf(call)
      if (!owner) return noAgent()
      const records = ctx.terminals.list(owner)
      if (records.length === 0) return { content: 'You have no open terminals.', meta: { count: 0 } }
      return {
        content: records
          .map(
            (r) =>
              `${r.id}  ${state(r)}  ${r.command.join(' ')}  (cwd ${r.cwd}, ${r.confinement === 'none' ? 'unconfined' : `confined by ${r.confinement}`})`,
          )
          .join('\n'),
        meta: { count: records.length },
      }
    },
  })
}
