// @dsh/tool-subagent: the model-facing delegation tools over `ctx.subagents`: `subagent` (start a
// child, foreground or background), `list_agents`, `send_message`, `interrupt_agent`; the notice a
// background child's completion leaves for its parent; and one prompt section.
import type { Context } from 'cordis'
import Schema from 'schemastery'
import type {} from '@dsh/agent'
import { type StartedSubagent, SubagentError, type SubagentRecord } from '@dsh/subagent'
import type { ToolCallContext, ToolOutput } from '@dsh/tools'
import { toolError as fail } from '@dsh/tools'
import { contributeSection } from '@dsh/system-prompt'

export const name = 'tool-subagent'
export const inject = ['tools', 'agents', 'subagents']

export interface ToolSubagentConfig {
  /** Longest final answer put into a tool result or notice, in characters; the rest is cut with a marker. */
  maxAnswerChars: number
  /** Also register `subagent_fork` (a `subagent` call with the `fork` provider). */
  forkTool: boolean
}

export const Config: Schema<Partial<ToolSubagentConfig>, ToolSubagentConfig> = Schema.object({
  maxAnswerChars: Schema.natural()
    .min(100)
    .default(20_000)
    .description('Longest child answer returned to the parent, in characters.'),
  forkTool: Schema.boolean()
    .default(false)
    .description('Also offer subagent_fork: a child that starts from a copy of this conversation.'),
})

export const NOTICE_SOURCE = { kind: 'plugin', plugin: '@dsh/tool-subagent', label: 'subagent finished' } as const
export const REPORT_SOURCE = { kind: 'plugin', plugin: '@dsh/tool-subagent', label: 'subagent report' } as const

export const PROMPT_SECTION = {
  id: 'tool:subagent',
  order: 340,
  // Left out while all of these tools are deferred (@dsh/tool-deferral).
  tools: ['subagent', 'list_agents', 'send_message', 'interrupt_agent'],
  text: [
    'Delegation (subagent):',
    '- Hand a self-contained piece of work (a search across many files, an independent change, a second opinion) to a subagent; several subagent calls in one step run in parallel.',
    '- A spawned subagent sees none of this conversation: put everything it needs into the prompt. Its final answer comes back as the tool result; verify claims that matter.',
    '- background: true returns at once; a notice arrives when the child finishes. Use list_agents, send_message and interrupt_agent to follow up.',
    '- When you are a subagent yourself, report sends your parent an intermediate finding while you keep working; your final answer still ends your task.',
  ].join('\n'),
}

function clip(text: string, max: number): string {
  if (text.length <= max) return text
  return `${text.slice(0, max)}\n[... ${text.length - max} more characters of the subagent's answer were cut]`
}

const quoted = (text: string) => JSON.stringify(text.length > 80 ? `${text.slice(0, 77)}...` : text)

function usageLine(record: SubagentRecord): string {
  const u = record.usage
  return u && u.input + u.output > 0 ? `, ${u.input + u.output} tokens` : ''
}

/** One line per child, for list_agents. */
export function formatList(records: SubagentRecord[]): string {
  if (records.length === 0) return 'You have started no subagents in this session.'
  const lines = records.map((r) => {
    const head = `${r.id}  ${r.status}  ${r.provider}${r.background ? ' (background)' : ''}  ${quoted(r.description)}${usageLine(r)}`
    const tail = r.error
      ? `\n    error [${r.error.code}]: ${r.error.message}`
      : r.text
        ? `\n    answer: ${quoted(r.text.replace(/\s+/g, ' '))}`
        : ''
    return head + tail
  })
  return `${records.length} subagent${records.length === 1 ? '' : 's'}:\n${lines.join('\n')}`
}

/** What a parent is told when a background child ends. */
export function noticeText(record: SubagentRecord, maxAnswerChars: number): string {
  const head = `[Background subagent ${record.id} (${quoted(record.description)}) ${record.status}.]`
  if (record.status === 'completed')
    return `${head}\nIts final answer:\n${clip(record.text || '(no text)', maxAnswerChars)}`
  const why = record.error ? ` [${record.error.code}]: ${record.error.message}` : ''
  return `${head}${why ? `\nReason${why}` : ''}${record.text ? `\nLast text:\n${clip(record.text, maxAnswerChars)}` : ''}`
}

/** What a parent is told when a background child reports while it runs. */
export function reportText(record: SubagentRecord, message: string, maxAnswerChars: number): string {
  return `[Background subagent ${record.id} (${quoted(record.description)}) reports, still running:]\n${clip(message, maxAnswerChars)}`
}

/** A foreground child's reports, put before its answer in the tool result. */
function withReports(record: SubagentRecord, body: string, maxAnswerChars: number): string {
  const reports = record.reports ?? []
  if (reports.length === 0) return body
  const listed = reports.map((r, i) => `[report ${i + 1}] ${r}`).join('\n')
  return `Reports it sent while working:\n${clip(listed, maxAnswerChars)}\n\nFinal answer:\n${body}`
}

/** The tool result of a foreground child. */
export function resultOf(record: SubagentRecord, maxAnswerChars: number): ToolOutput {
  const meta = {
    id: record.id,
    status: record.status,
    provider: record.provider,
    ...(record.sessionId !== undefined ? { sessionId: record.sessionId } : {}),
    ...(record.usage ? { usage: { ...record.usage } } : {}),
  }
  if (record.status === 'completed') {
    return {
      content: withReports(
        record,
        clip(record.text || '(the subagent finished without a final answer)', maxAnswerChars),
        maxAnswerChars,
      ),
      meta,
    }
  }
  const error = record.error ?? { code: record.status.toUpperCase(), message: `the subagent ended ${record.status}` }
  const partial = record.text ? ` Its last text was:\n${clip(record.text, maxAnswerChars)}` : ''
  const failed = fail(error.code, `subagent ${record.id} ${record.status}: ${error.message}.${partial}`)
  return { ...failed, content: withReports(record, failed.content as string, maxAnswerChars), meta }
}

export function apply(ctx: Context, config: ToolSubagentConfig): void {
  contributeSection(ctx, PROMPT_SECTION)

  const parentOf = (call: ToolCallContext) => (call.agentId !== undefined ? ctx.agents.get(call.agentId) : undefined)
  const noAgent = () => fail('NO_AGENT', 'this call is not attached to an agent, so it has no subagents')
  const refused = (error: unknown): ToolOutput => {
    if (SubagentError.is(error)) return fail(error.code, error.message)
    throw error
  }

  // A background child's end reaches its parent as context for the parent's next request.
  ctx.on('subagent/finished', (record) => {
    if (!record.background) return
    const parent = ctx.agents.get(record.parentAgentId)
    if (!parent || parent.status === 'disposed') return
    parent.inject({ content: noticeText(record, config.maxAnswerChars), source: NOTICE_SOURCE })
  })

  // A background child's report reaches its parent the same way, while the child keeps running.
  // A foreground child's reports come back in its tool result instead (resultOf).
  ctx.on('subagent/report', (record, message) => {
    if (!record.background) return
    const parent = ctx.agents.get(record.parentAgentId)
    if (!parent || parent.status === 'disposed') return
    parent.inject({ content: reportText(record, message, config.maxAnswerChars), source: REPORT_SOURCE })
  })

  // `report` is offered to in-process subagents only (their session opens with subagent/link):
  // a root agent has no parent to report to.
  ctx.on('agent/request', (payload, next) => {
    const isChild = payload.agent.session.events[0]?.type === 'subagent/link'
    if (!isChild && payload.request.tools?.some((t) => t.name === 'report')) {
      payload.request.tools = payload.request.tools.filter((t) => t.name !== 'report')
    }
    return next()
  })

  const providerHelp = () =>
    ctx.subagents
      .providers()
      .map((p) => `"${p.name}"${p.description ? `: ${p.description}` : ''}`)
      .join('; ')

  ctx.tools.register<{ description: string; prompt: string; provider?: string; background?: boolean; world?: string }>({
    name: 'subagent',
    // The line load_tools lists while this tool is deferred (@dsh/tool-deferral).
    summary: 'Start a subagent on a self-contained task and get its final answer.',
    defer: true,
    description:
      'Start a subagent (a child agent with the same tools) on a self-contained task and get its final answer. ' +
      'Several subagent calls in one step run in parallel. With background: true the call returns at once with the ' +
      'child id and a notice arrives when the child finishes.',
    parameters: {
      type: 'object',
      properties: {
        description: { type: 'string', description: 'A few words naming the task (shown in listings).' },
        prompt: { type: 'string', description: 'The complete task for the child, with every detail it needs.' },
        provider: {
          type: 'string',
          description:
            'How to run the child. Default "spawn" (fresh agent); "fork" starts from a copy of this conversation.',
        },
        background: {
          type: 'boolean',
          description: 'Return at once and be notified when the child finishes. Default false.',
        },
        world: {
          type: 'string',
          description:
            'Where the child runs. Default: where you run. "e2b" (when offered) gives it its own E2B sandbox with a fresh copy of the workspace; its changes come back as its own patch.',
        },
      },
      required: ['description', 'prompt'],
      additionalProperties: false,
    },
    concurrencySafe: true,
    execute: (args, call) => delegate(args, call),
  })

  if (config.forkTool) {
    ctx.tools.register<{ description: string; prompt: string; background?: boolean }>({
      name: 'subagent_fork',
      description:
        'Start a subagent that begins with a copy of this conversation so far (your current turn excluded) and get its final answer. ' +
        'Use it for a side task that needs the context you already have. With background: true the call returns at once and a notice follows.',
      parameters: {
        type: 'object',
        properties: {
          description: { type: 'string', description: 'A few words naming the task (shown in listings).' },
          prompt: { type: 'string', description: 'What the forked agent should do.' },
          background: {
            type: 'boolean',
            description: 'Return at once and be notified when the child finishes. Default false.',
          },
        },
        required: ['description', 'prompt'],
        additionalProperties: false,
      },
      concurrencySafe: true,
      execute: (args, call) => delegate({ ...args, provider: 'fork' }, call),
    })
  }

  async function delegate(
    args: { description: string; prompt: string; provider?: string; background?: boolean; world?: string },
    call: ToolCallContext,
  ): Promise<ToolOutput> {
    const parent = parentOf(call)
    if (!parent) return noAgent()
    const background = args.background === true
    let started: StartedSubagent
    try {
      started = await ctx.subagents.start({
        parent,
        description: args.description,
        prompt: args.prompt,
        ...(args.provider !== undefined ? { provider: args.provider } : {}),
        ...(args.world !== undefined ? { world: args.world } : {}),
        callId: call.callId,
        background,
        ...(background ? {} : { signal: call.signal }),
      })
    } catch (error) {
      if (SubagentError.is(error) && error.code === 'UNKNOWN_PROVIDER')
        return fail(error.code, `${error.message}. Providers: ${providerHelp()}`)
      return refused(error)
    }
    const { record } = started
    if (background) {
      return {
        content:
          `Started subagent ${record.id} (${record.provider}) in the background. A notice will arrive when it finishes; ` +
          `use list_agents to check on it, send_message to add instructions, interrupt_agent to stop it.`,
        meta: {
          id: record.id,
          provider: record.provider,
          background: true,
          ...(record.sessionId ? { sessionId: record.sessionId } : {}),
        },
      }
    }
    return resultOf(await started.finished, config.maxAnswerChars)
  }

  ctx.tools.register<{ message: string }>({
    name: 'report',
    // Never deferred: it is for subagents only (filtered out of a root agent's requests below).
    defer: false,
    description:
      'Send your parent agent an intermediate finding while you keep working (you are a subagent). ' +
      'Your final answer still ends your task; use report for results the parent can act on before then.',
    parameters: {
      type: 'object',
      properties: { message: { type: 'string', description: 'What the parent should know now.' } },
      required: ['message'],
      additionalProperties: false,
    },
    concurrencySafe: true,
    execute(args, call) {
      if (call.agentId === undefined) return noAgent()
      try {
        const record = ctx.subagents.report(call.agentId, args.message)
        return {
          content: `Reported to your parent (report ${record.reports?.length ?? 1}); keep working on your task.`,
          meta: { id: record.id },
        }
      } catch (error) {
        return refused(error)
      }
    },
  })

  ctx.tools.register<Record<string, never>>({
    name: 'list_agents',
    // The line load_tools lists while this tool is deferred (@dsh/tool-deferral).
    summary: 'List your subagents (ids, status, answers).',
    defer: true,
    description:
      'List the subagents you started in this session (running and finished) with their ids, status and answers.',
    parameters: { type: 'object', properties: {}, additionalProperties: false },
    concurrencySafe: true,
    execute(_args, call) {
      const parent = parentOf(call)
      if (!parent) return noAgent()
      const records = ctx.subagents.list(parent)
      return {
        content: formatList(records),
        meta: { count: records.length, running: records.filter((r) => r.status === 'running').length },
      }
    },
  })

  ctx.tools.register<{ id: string; message: string }>({
    name: 'send_message',
    // The line load_tools lists while this tool is deferred (@dsh/tool-deferral).
    summary: 'Send an extra instruction to a running subagent.',
    defer: true,
    description: 'Send an extra instruction to one of your running subagents; it reads it at its next step.',
    parameters: {
      type: 'object',
      properties: {
        id: { type: 'string', description: 'The subagent id (e.g. "sub-1").' },
        message: { type: 'string', description: 'What to tell it.' },
      },
      required: ['id', 'message'],
      additionalProperties: false,
    },
    execute(args, call) {
      const parent = parentOf(call)
      if (!parent) return noAgent()
      try {
        const record = ctx.subagents.send(parent, args.id, args.message)
        return {
          content: `Message delivered to subagent ${record.id}; it will read it at its next step.`,
          meta: { id: record.id },
        }
      } catch (error) {
        return refused(error)
      }
    },
  })

  ctx.tools.register<{ id: string }>({
    name: 'interrupt_agent',
    defer: true,
    description: 'Stop one of your running subagents. Its run ends cancelled; anything it already did stays done.',
    parameters: {
      type: 'object',
      properties: { id: { type: 'string', description: 'The subagent id (e.g. "sub-1").' } },
      required: ['id'],
      additionalProperties: false,
    },
    async execute(args, call) {
      const parent = parentOf(call)
      if (!parent) return noAgent()
      try {
        const record = ctx.subagents.interrupt(parent, args.id)
        const final = await ctx.subagents.wait(parent, record.id)
        return {
          content: `Subagent ${record.id} was interrupted${final ? ` (status: ${final.status})` : ''}.`,
          meta: { id: record.id },
        }
      } catch (error) {
        return refused(error)
      }
    },
  })
}
