// @dsh/tool-bash-persistent: a model-facing `bash(command)` backed by one persistent shell per
// agent on `ctx.terminals`, so `cd`, exported variables and functions carry over between calls.
// Each command is followed by a marker line carrying its exit status; the output is what the
// shell printed between the two. A deployment mounts this instead of @dsh/tool-bash.
import { randomBytes } from 'node:crypto'
import type { Context } from 'cordis'
import Schema from 'schemastery'
import type {} from '@dsh/agent'
import { TerminalError, type TerminalOwner } from '@dsh/terminal'
import { toolError as fail } from '@dsh/tools'

export const name = 'tool-bash-persistent'
export const inject = ['tools', 'terminals']

export interface ToolBashPersistentConfig {
  defaultTimeoutMs: number
  maxTimeoutMs: number
  /** Characters kept from the beginning and from the end of long output. */
  headChars: number
  tailChars: number
}

export const Config: Schema<Partial<ToolBashPersistentConfig>, ToolBashPersistentConfig> = Schema.object({
  defaultTimeoutMs: Schema.natural().min(1).default(120_000),
  maxTimeoutMs: Schema.natural().min(1).default(600_000),
  headChars: Schema.natural().default(15_000),
  tailChars: Schema.natural().default(15_000),
})

interface Shell {
  id: string
  marker: string
  /** Serializes commands: one at a time per shell. */
  queue: Promise<unknown>
}

export function clipMiddle(text: string, head: number, tail: number): string {
  if (text.length <= head + tail) return text
  return `${text.slice(0, head)}\n[... ${text.length - head - tail} characters omitted ...]\n${text.slice(text.length - tail)}`
}

export function apply(ctx: Context, config: ToolBashPersistentConfig): void {
  const shells = new Map<string, Shell>()
  ctx.on('agent/disposed', (agent) => void shells.delete(agent.id))

  /** Output after `since` up to the marker line, and the status it carries (undefined: not yet). */
  const scan = (text: string, marker: string): { output: string; code: number } | undefined => {
    const match = new RegExp(`\\n?${marker}_(\\d+)__\\n`).exec(text)
    if (!match) return undefined
    return { output: text.slice(0, match.index), code: Number(match[1]) }
  }

  async function runIn(owner: TerminalOwner, shell: Shell, command: string, timeoutMs: number, signal: AbortSignal) {
    const since = (await ctx.terminals.read(shell.id, owner)).to
    ctx.terminals.write(shell.id, owner, `{\n${command}\n}\nprintf '\\n${shell.marker}_%s__\\n' "$?"\n`)
    const deadline = Date.now() + timeoutMs
    let interrupted: 'timeout' | 'cancelled' | undefined
    for (;;) {
      const left = deadline - Date.now()
      if (!interrupted && (left <= 0 || signal.aborted)) {
        interrupted = signal.aborted ? 'cancelled' : 'timeout'
        ctx.terminals.signal(shell.id, owner, 'SIGINT')
      }
      const out = await ctx.terminals.read(shell.id, owner, {
        since,
        waitMs: interrupted ? 2000 : Math.max(50, Math.min(left, 1000)),
        quietMs: 20,
      })
      const done = scan(out.text, shell.marker)
      if (done) return { ...done, interrupted }
      if (out.status !== 'running') return { output: out.text, code: -1, interrupted, exited: true }
      if (interrupted && Date.now() > deadline + 5000) return { output: out.text, code: -1, interrupted, stuck: true }
    }
  }

  async function shellFor(owner: TerminalOwner, cwd: string): Promise<Shell> {
    const known = shells.get(owner.agentId)
    if (known) {
      try {
        if (ctx.terminals.get(known.id, owner).status === 'running') return known
      } catch {
        // closed under us: open a new one
      }
      shells.delete(owner.agentId)
    }
    const record = await ctx.terminals.open({
      owner,
      cwd,
      command: ['bash', '--noprofile', '--norc'],
      env: { PS1: '', PS2: '' },
    })
    const shell: Shell = {
      id: record.id,
      marker: `__DSH_DONE_${randomBytes(6).toString('hex')}`,
      queue: Promise.resolve(),
    }
    // No echo of typed input, no history expansion; then wait until the shell answers.
    const ready = await runIn(owner, shell, 'stty -echo 2>/dev/null; set +H', 30_000, new AbortController().signal)
    if (ready.interrupted || 'exited' in ready)
      throw new TerminalError('OPEN_FAILED', 'the persistent shell did not start')
    shells.set(owner.agentId, shell)
    return shell
  }

  ctx.tools.register<{ command: string; description: string; timeoutMs?: number }>({
    name: 'bash',
    description: [
      'Run a bash command in your persistent shell and return its output and exit code.',
      '',
      '- The shell lives across calls: the working directory, exported variables and shell functions carry over to the next call.',
      `- Timeout: ${config.defaultTimeoutMs} ms unless you set timeoutMs (at most ${config.maxTimeoutMs} ms); on timeout the command is interrupted (Ctrl-C) and the shell stays.`,
      '- stdout and stderr arrive together. Do not start programs that wait for input; use the terminal tools for interactive work.',
    ].join('\n'),
    parameters: {
      type: 'object',
      properties: {
        command: { type: 'string', minLength: 1, description: 'The bash command to run.' },
        description: { type: 'string', description: 'What the command does, in a few words.' },
        timeoutMs: { type: 'integer', minimum: 1, description: 'Timeout in milliseconds.' },
      },
      required: ['command', 'description'],
      additionalProperties: false,
    },
    async execute(args, call) {
      if (call.agentId === undefined)
        return fail('NO_AGENT', 'the persistent shell belongs to an agent, and this call is not attached to one')
      const owner: TerminalOwner = {
        agentId: call.agentId,
        ...(call.sessionId !== undefined ? { sessionId: call.sessionId } : {}),
      }
      const timeoutMs = Math.min(args.timeoutMs ?? config.defaultTimeoutMs, config.maxTimeoutMs)
      try {
        const shell = await shellFor(owner, call.cwd)
        const run = shell.queue.then(() => runIn(owner, shell, args.command, timeoutMs, call.signal))
        shell.queue = run.catch(() => {})
        const result = await run
        const output = clipMiddle(result.output.replace(/^\n/, ''), config.headChars, config.tailChars)
        const body = output === '' ? '(no output)' : output.replace(/\n$/, '')
        if ('exited' in result) {
          shells.delete(owner.agentId)
          return {
            ...fail(
              'SHELL_EXITED',
              'the shell ended (the command ran `exit` or killed it); the next call starts a new shell in the working directory',
            ),
            content: `${body}\n\nError [SHELL_EXITED]: the shell ended; the next call starts a new one.`,
          }
        }
        if (result.interrupted === 'timeout')
          return {
            ...fail('TIMEOUT', `interrupted after ${timeoutMs} ms`),
            content: `${body}\n\nError [TIMEOUT]: the command was interrupted after ${timeoutMs} ms; the shell and its state remain.`,
          }
        if (result.interrupted === 'cancelled')
          return {
            ...fail('CANCELLED', 'the call was cancelled'),
            content: `${body}\n\n[cancelled: the command was interrupted]`,
          }
        return { content: `${body}\n\n[exit code ${result.code}]`, meta: { exitCode: result.code, terminal: shell.id } }
      } catch (error) {
        if (TerminalError.is(error)) return fail(error.code, error.message)
        throw error
      }
    },
  })
}
