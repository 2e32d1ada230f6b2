// Public vocabulary of the subagent seam: records, provider contract, errors, session events.
import type { Agent } from '@dsh/agent'
import type { TokenUsage } from '@dsh/llm'
import type { LoggedError } from '@dsh/session'
import type { ChildInheritance } from './inherit.ts'
import { CodedError } from '@dsh/brand'

/** Where a child is in its life. `interrupted`: the host stopped before the child finished (read from a log). */
export type SubagentStatus = 'running' | 'completed' | 'failed' | 'cancelled' | 'interrupted'

/** What links a child to the agent that started it. Logged as `subagent/link` in an in-process child's session. */
export interface SubagentLink {
  /** Child id, unique among the children of one parent session (`sub-1`, `sub-2`, ...). */
  id: string
  provider: string
  parentSessionId: string
  parentAgentId: string
  /** 1 for a child of a root agent. */
  depth: number
  /** The tool call that started the child, when a tool did. */
  callId?: string
}

/** A snapshot of one child (never live state). */
export interface SubagentRecord extends SubagentLink {
  description: string
  background: boolean
  status: SubagentStatus
  /** The child's own session, when the provider has one it can name. */
  sessionId?: string
  /** The child's agent id, for in-process children. */
  agentId?: string
  startedAt: number
  finishedAt?: number
  /** The child's final answer (its last assistant text). */
  text?: string
  error?: LoggedError
  /** Summed token usage of the child's turns. */
  usage?: TokenUsage
  /** What the child sent its parent with `report()` while it ran, oldest first. */
  reports?: string[]
}

/** How a provider reports the end of a child's run. */
export interface ChildOutcome {
  status: 'completed' | 'failed' | 'cancelled'
  text: string
  error?: LoggedError
  usage?: TokenUsage
}

/**
 * Another place a child's commands and files can live than its parent's (`world` of a start
 * request): e.g. "e2b", a remote sandbox of its own. Registered by the world's owner.
 */
export interface SubagentWorld {
  /** `^[a-z][a-z0-9-]{0,31}$` */
  readonly name: string
  /** One line for the model: what the child gets there. */
  readonly description?: string
  /** Opens the place of one child; nothing is created until the child first uses it. */
  open(link: SubagentLink): SubagentWorldLease
}

/** One child's place in a world. */
export interface SubagentWorldLease {
  /** Runs `fn` so that every call it makes, and everything that continues from it, acts there. */
  run<T>(fn: () => T): T
  /** Ends the place (saves what it must, releases the machine); once, after the child was disposed. */
  close(): Promise<void>
}

export interface ProviderStartRequest {
  parent: Agent
  link: SubagentLink
  description: string
  prompt: string
  /**
   * What the child inherits from its parent: sandbox mode and policy, the user's patch layers,
   * depth and limit. A provider that starts another process must confine the child by it.
   */
  inherit: ChildInheritance
  /** The child's place when the request named a `world`; only providers with `worlds: true` get one. */
  world?: SubagentWorldLease
}

/** A running child as a provider hands it to the seam. */
export interface ProviderChild {
  sessionId?: string
  agentId?: string
  /** Settles once with how the child's run ended; it should not reject (a rejection counts as `failed`). */
  readonly result: Promise<ChildOutcome>
  /** Delivers a message into the running child (steering). Absent: the provider cannot. */
  send?(message: string): void
  /** Asks the child to stop; `result` then settles `cancelled`. */
  abort(reason?: string): void
  /** Releases everything the child holds. Called once, after `result` settled. */
  dispose(): Promise<void>
}

export interface SubagentProvider {
  /** `^[a-z][a-z0-9-]{0,31}$` */
  readonly name: string
  /** One line for the model: what kind of child this provider makes. */
  readonly description?: string
  /** True when the provider runs a child inside a `world` lease (in-process children do). */
  readonly worlds?: boolean
  start(request: ProviderStartRequest): ProviderChild | Promise<ProviderChild>
}

export interface StartSubagentOptions {
  parent: Agent
  /** Default: the service's `defaultProvider`. */
  provider?: string
  description: string
  prompt: string
  callId?: string
  background?: boolean
  /** Run the child in its own place of this registered world (e.g. "e2b"); default: the parent's. */
  world?: string
  /**
   * Aborting it interrupts the child (a foreground tool call passes its signal); while the
   * request waits for a free slot, aborting it withdraws the request (`CANCELLED`).
   */
  signal?: AbortSignal
}

export const SUBAGENT_ERROR_CODES = [
  'UNKNOWN_PROVIDER',
  'DEPTH_LIMIT',
  'CONCURRENCY_LIMIT',
  'UNKNOWN_AGENT',
  'AGENT_FINISHED',
  'NOT_SUPPORTED',
  'INVALID_REQUEST',
  'START_FAILED',
  'CANCELLED',
  'NOT_A_SUBAGENT',
] as const
export type SubagentErrorCode = (typeof SUBAGENT_ERROR_CODES)[number]

/** A refused request: `code` is stable, `message` is one sentence a model can act on. */
export class SubagentError extends CodedError<SubagentErrorCode> {
  override name = 'SubagentError'
  static is(value: unknown): value is SubagentError {
    return value instanceof SubagentError
  }
}

declare module '@dsh/session' {
  interface SessionEventMap {
    /** In the parent's session: a child was started. */
    'subagent/started': {
      id: string
      provider: string
      description: string
      depth: number
      background: boolean
      callId?: string
      sessionId?: string
      agentId?: string
    }
    /** In the parent's session: a child's run ended. */
    'subagent/finished': {
      id: string
      status: 'completed' | 'failed' | 'cancelled'
      text: string
      error?: LoggedError
      usage?: TokenUsage
    }
    /** First event of an in-process child's own session: who started it. */
    'subagent/link': SubagentLink
    /** In the parent's session: a running child sent its parent a message (`report`). */
    'subagent/report': { id: string; message: string }
  }
}

declare module 'cordis' {
  interface Context {
    subagents: import('./service.ts').SubagentService
  }
  interface Events {
    'subagent/started'(record: SubagentRecord): void
    'subagent/finished'(record: SubagentRecord): void
    /** A running child reported to its parent; `record` includes the new report. */
    'subagent/report'(record: SubagentRecord, message: string): void
  }
}
