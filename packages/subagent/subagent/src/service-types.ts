// The shapes of the `ctx.subagents` service: its configuration (schema and defaults), the
// constants its seam enforces (provider names, the event types it logs, the longest report), and
// the records it keeps of a running child.
import Schema from 'schemastery'
import type { Agent } from '@dsh/agent'
import type { ProviderChild, SubagentRecord } from './types.ts'

export const PROVIDER_NAME_PATTERN = /^[a-z][a-z0-9-]{0,31}$/
export const SUBAGENT_EVENT_TYPES = [
  'subagent/started',
  'subagent/finished',
  'subagent/link',
  'subagent/report',
] as const

/** Longest report a child may send its parent, in characters. */
export const MAX_REPORT_CHARS = 20_000

export interface SubagentServiceConfig {
  defaultProvider: string
  maxDepth: number
  maxConcurrent: number
  maxQueued: number
  timeoutMs: number
  maxSteps?: number
  /** World of children started without one, when that world is registered (e.g. "e2b"). */
  world?: string
}

export const subagentServiceConfig: Schema<Partial<SubagentServiceConfig>, SubagentServiceConfig> = Schema.object({
  defaultProvider: Schema.string().default('spawn').description('Provider used when a request names none.'),
  maxDepth: Schema.natural()
    .min(1)
    .default(2)
    .description('Deepest delegation allowed: 1 lets roots start children, 2 lets children start their own, ...'),
  maxConcurrent: Schema.natural().min(1).default(4).description('Most children running at once in this process.'),
  maxQueued: Schema.natural()
    .default(16)
    .description(
      'Start requests of root agents that may wait for a free slot (first come, first served); beyond it, or for nested children, a full house is CONCURRENCY_LIMIT. 0 = never wait.',
    ),
  timeoutMs: Schema.natural()
    .default(600_000)
    .description('A child still running after this long is stopped and fails TIMEOUT; 0 = no limit.'),
  maxSteps: Schema.natural().min(1).description("Step limit of an in-process child turn (default: the agent loop's)."),
  world: Schema.string().description(
    'World of children started without one (e.g. "e2b": a sandbox each), used while that world is registered.',
  ),
})

export interface Live {
  record: SubagentRecord
  parent: Agent
  child?: ProviderChild
  /** Why the seam stopped the child, when it did (timeout, interrupt, parent gone). */
  stoppedBy?: { code: string; message: string }
  finished: Promise<SubagentRecord>
}

export interface StartedSubagent {
  /** Snapshot taken once the child runs. */
  record: SubagentRecord
  /** Resolves (never rejects) with the final snapshot once the child's run ended. */
  finished: Promise<SubagentRecord>
}
