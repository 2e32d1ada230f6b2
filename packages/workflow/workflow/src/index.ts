// @dsh/workflow: the workflow seam (`ctx.workflowEngine`). An engine runs one JavaScript
// orchestration script that fans out child agents (`await agents.spawn({...})`) and returns a
// value, under caps on children, concurrency, depth and time; cancellation reaches every child.
// Vocabulary only: no I/O here.
import { Service, type Context } from 'cordis'
import type { Agent } from '@dsh/agent'
import type { TokenUsage } from '@dsh/llm'
import type { JsonValue } from '@dsh/brand'

export type { JsonValue }

export interface WorkflowLimits {
  /** Most children one run may start. */
  maxChildren: number
  /** Most children of one run running at once; further `spawn` calls wait for a slot. */
  maxConcurrent: number
  /** Wall-clock budget of the whole run, in ms; children still running then are cancelled. */
  timeoutMs: number
  /** A run may start only from an agent whose delegation depth is below this (0: a root agent). */
  maxDepth: number
}

/** What a script passes to `agents.spawn`. */
export interface WorkflowChildRequest {
  prompt: string
  /** Short label; default: the first line of the prompt, cut to 60 characters. */
  description?: string
  /** Subagent provider (`spawn` by default, see ctx.subagents). */
  provider?: string
  /** Where the child's commands and files live (e.g. "e2b": a sandbox of its own), when that world is registered. */
  world?: string
}

export type WorkflowChildStatus = 'completed' | 'failed' | 'cancelled'

/** What `agents.spawn` resolves with (it never rejects for a child that failed: check `status`). */
export interface WorkflowChildResult {
  /** The child's subagent id in the parent session (`sub-3`). */
  id: string
  /** 0-based order in which the script started its children. */
  index: number
  description: string
  status: WorkflowChildStatus
  /** The child's final answer. */
  text: string
  error?: { code: string; message: string }
  usage?: TokenUsage
  /** The child's own session id, when it has one. */
  sessionId?: string
}

export type WorkflowRunEvent =
  | { type: 'child-started'; index: number; id: string; description: string; provider: string; sessionId?: string }
  | { type: 'child-finished'; child: WorkflowChildResult }
  | { type: 'log'; level: 'log' | 'info' | 'warn' | 'error' | 'debug'; text: string }

export interface WorkflowRunRequest {
  /** The agent on whose behalf children are started (they are its subagents). */
  parent: Agent
  script: string
  /** Visible to the script as the constant `input`. */
  input?: JsonValue
  /** The tool call that started the run; children are linked to it. */
  callId?: string
  /** Each field defaults to the engine's configuration and may only tighten it. */
  limits?: Partial<WorkflowLimits>
  /** Aborting it cancels the run and every child it started. */
  signal?: AbortSignal
  /** Observes the run as it happens (children starting and finishing, console lines). */
  onEvent?: (event: WorkflowRunEvent) => void
}

export const WORKFLOW_ERROR_CODES = [
  'SYNTAX',
  'THROWN',
  'TIMEOUT',
  'MEMORY',
  'CANCELLED',
  'UNSERIALIZABLE',
  'DEPTH_LIMIT',
  'INTERNAL',
  'REFUSED',
] as const
export type WorkflowErrorCode = (typeof WORKFLOW_ERROR_CODES)[number]

export interface WorkflowRunResult {
  status: 'completed' | 'failed' | 'cancelled'
  /** The script's return value, when it completed and returned one. */
  value?: JsonValue
  error?: { code: WorkflowErrorCode; message: string; stack?: string }
  logs: Array<{ level: string; text: string }>
  /** Every child the run started, in start order, with how it ended. */
  children: WorkflowChildResult[]
  limits: WorkflowLimits
  durationMs: number
}

/** The seam. `run` never rejects for anything a script or a child does: failures are in the result. */
export abstract class WorkflowEngine extends Service {
  constructor(ctx: Context) {
    super(ctx, 'workflowEngine')
  }

  /** The limits a run gets: the request's fields, each capped at the engine's configuration. */
  abstract resolveLimits(requested?: Partial<WorkflowLimits>): WorkflowLimits

  abstract run(request: WorkflowRunRequest): Promise<WorkflowRunResult>
}

declare module 'cordis' {
  interface Context {
    workflowEngine: WorkflowEngine
  }
}

/** Checks a child request from a script; returns a sentence naming the problem, or undefined. */
export function checkChildRequest(value: unknown): string | undefined {
  if (value === null || typeof value !== 'object' || Array.isArray(value))
    return 'agents.spawn takes one object: { prompt, description?, provider?, world? }'
  const request = value as Record<string, unknown>
  if (typeof request.prompt !== 'string' || request.prompt.trim() === '')
    return 'agents.spawn: prompt must be a non-empty string'
  if (request.description !== undefined && typeof request.description !== 'string')
    return 'agents.spawn: description must be a string'
  if (request.provider !== undefined && typeof request.provider !== 'string')
    return 'agents.spawn: provider must be a string'
  if (request.world !== undefined && (typeof request.world !== 'string' || request.world === ''))
    return 'agents.spawn: world must be a non-empty string (e.g. "e2b")'
  const extra = Object.keys(request).filter((key) => !['prompt', 'description', 'provider', 'world'].includes(key))
  if (extra.length > 0)
    return `agents.spawn: unexpected field${extra.length > 1 ? 's' : ''} ${extra.join(', ')} (allowed: prompt, description, provider, world)`
  return undefined
}

/** The default description of a child: the prompt's first line, at most 60 characters. */
export function describePrompt(prompt: string): string {
  const line = prompt.trim().split('\n')[0].trim()
  return line.length > 60 ? `${line.slice(0, 57)}...` : line
}

export const name = 'workflow'
