// @dsh/tool-jobs: the model-facing controller of `ctx.jobs`: `job_output`, `job_list`, `job_kill`,
// the notice a finished job leaves for the agent that started it, and one prompt section.
import type { Context } from 'cordis'
import Schema from 'schemastery'
import type {} from '@dsh/agent'
import { JobError, type JobOutput, type JobOwner, type JobRecord } from '@dsh/jobs'
import type { ToolCallContext, ToolOutput } from '@dsh/tools'
import { toolError as fail } from '@dsh/tools'
import { contributeSection } from '@dsh/system-prompt'

export const name = 'tool-jobs'
export const inject = ['tools', 'jobs', 'agents']

export interface ToolJobsConfig {
  /** Most output characters one job_output call returns (the newest ones when there are more). */
  maxOutputChars: number
}

export const Config: Schema<Partial<ToolJobsConfig>, ToolJobsConfig> = Schema.object({
  maxOutputChars: Schema.natural()
    .min(1000)
    .default(30_000)
    .description('Most output characters one job_output call returns.'),
})

export const NOTICE_SOURCE = { kind: 'plugin', plugin: '@dsh/tool-jobs', label: 'job finished' } as const

export const PROMPT_SECTION = {
  id: 'tool:jobs',
  order: 345,
  // Left out while all of these tools are deferred (@dsh/tool-deferral).
  tools: ['job_output', 'job_list', 'job_kill'],
  text: [
    'Background jobs (bash run_in_background, job_output, job_list, job_kill):',
    '- Start long-running commands (servers, watchers, long builds) with bash run_in_background: true; the call returns a job id at once and the job keeps running across turns.',
    '- Read new output with job_output {id, since} using the `next` offset from the previous read; a notice arrives when a job ends. Kill jobs you no longer need.',
  ].join('\n'),
}

const quoted = (text: string) => JSON.stringify(text.length > 80 ? `${text.slice(0, 77)}...` : text)

export function statusText(record: JobRecord): string {
  if (record.status === 'running') return 'running'
  if (record.status === 'exited') return `exited with code ${record.exitCode ?? '?'}`
  if (record.status === 'killed') return 'killed'
  return `failed${record.error ? ` [${record.error.code}]: ${record.error.message}` : ''}`
}

export function noticeText(record: JobRecord): string {
  return `[Background job ${record.id} (${quoted(record.description)}) ${statusText(record)}; ${record.outputBytes} bytes of output. Read it with job_output.]`
}

export function apply(ctx: Context, config: ToolJobsConfig): void {
  contributeSection(ctx, PROMPT_SECTION)
  const ownerOf = (call: ToolCallContext): JobOwner => ({
    ...(call.sessionId !== undefined ? { sessionId: call.sessionId } : {}),
    ...(call.agentId !== undefined ? { agentId: call.agentId } : {}),
  })
  const refused = (error: unknown): ToolOutput => {
    if (JobError.is(error)) return fail(error.code, error.message)
    throw error
  }

  // A finished job's end reaches the agent that started it, at that agent's next request.
  ctx.on('job/finished', (record) => {
    const agent = record.owner.agentId !== undefined ? ctx.agents.get(record.owner.agentId) : undefined
    if (!agent || agent.status === 'disposed') return
    agent.inject({ content: noticeText(record), source: NOTICE_SOURCE })
  })

  ctx.tools.register<{ id: string; since?: number }>({
    name: 'job_output',
    defer: true,
    description:
      'Read the output of a background job. Returns the output from byte offset `since` (default 0) to now, the job status, ' +
      'and `next`: pass it as `since` next time to get only new output.',
    parameters: {
      type: 'object',
      properties: {
        id: { type: 'string', description: 'The job id (e.g. "bash-1").' },
        since: {
          type: 'integer',
          minimum: 0,
          description: 'Byte offset to read from: the `next` of the previous read.',
        },
      },
      required: ['id'],
      additionalProperties: false,
    },
    concurrencySafe: true,
    execute(args, call) {
      let out: JobOutput
      try {
        out = ctx.jobs.output(args.id, {
          ...(args.since !== undefined ? { since: args.since } : {}),
          owner: ownerOf(call),
        })
      } catch (error) {
        return refused(error)
      }
      const record = ctx.jobs.get(args.id, ownerOf(call))
      let text = out.text
      let cut = 0
      if (text.length > config.maxOutputChars) {
        cut = text.length - config.maxOutputChars
        text = text.slice(cut)
      }
      const notes: string[] = []
      if (out.skipped > 0)
        notes.push(
          `${out.skipped} earlier bytes are no longer in memory${out.spillPath ? `; the ${out.spillError ? 'spilled' : 'whole'} output is in ${out.spillPath}` : ''}`,
        )
      if (out.spillError) notes.push(out.spillError)
      if (cut > 0)
        notes.push(
          `the first ${cut} characters of this range were left out${out.spillPath ? ` (see ${out.spillPath})` : ''}`,
        )
      const head = `Job ${out.id} (${statusText(record)}); output bytes ${out.from}-${out.to}, next: ${out.to}${notes.length ? `; ${notes.join('; ')}` : ''}.`
      const body = text === '' ? '(no new output)' : text
      return {
        content: `${head}\n${body}`,
        meta: {
          id: out.id,
          status: out.status,
          from: out.from,
          next: out.to,
          ...(out.spillPath ? { spillPath: out.spillPath } : {}),
        },
      }
    },
  })

  ctx.tools.register<Record<string, never>>({
    name: 'job_list',
    // The line load_tools lists while this tool is deferred (@dsh/tool-deferral).
    summary: 'List the background jobs (ids, status, output size).',
    defer: true,
    description: 'List the background jobs of this session with their ids, status and output size.',
    parameters: { type: 'object', properties: {}, additionalProperties: false },
    concurrencySafe: true,
    execute(_args, call) {
      const jobs = ctx.jobs.list(ownerOf(call))
      if (jobs.length === 0) return { content: 'No background jobs in this session.', meta: { count: 0 } }
      const lines = jobs.map(
        (j) =>
          `${j.id}  ${statusText(j)}  ${j.outputBytes} bytes  ${quoted(j.description)}${j.command ? `  $ ${quoted(j.command)}` : ''}`,
      )
      return {
        content: `${jobs.length} background job${jobs.length === 1 ? '' : 's'}:\n${lines.join('\n')}`,
        meta: { count: jobs.length },
      }
    },
  })

  ctx.tools.register<{ id: string }>({
    name: 'job_kill',
    // The line load_tools lists while this tool is deferred (@dsh/tool-deferral).
    summary: 'Stop a background job and everything it started.',
    defer: true,
    description: 'Stop a background job (its process and everything it started). Its output stays readable.',
    parameters: {
      type: 'object',
      properties: { id: { type: 'string', description: 'The job id (e.g. "bash-1").' } },
      required: ['id'],
      additionalProperties: false,
    },
    async execute(args, call) {
      try {
        const before = ctx.jobs.get(args.id, ownerOf(call))
        if (before.status !== 'running')
          return {
            content: `Job ${before.id} had already ended (${statusText(before)}).`,
            meta: { id: before.id, status: before.status },
          }
        const record = await ctx.jobs.kill(args.id, ownerOf(call))
        return {
          content: `Job ${record.id} was stopped (${statusText(record)}).`,
          meta: { id: record.id, status: record.status },
        }
      } catch (error) {
        return refused(error)
      }
    },
  })
}
