// The `subagents.list` method of the web host (browser-safe: no node imports). It answers what a
// browser cannot read from a parent's log alone: whether a child with no `subagent/finished`
// event is still running in this host or was cut off (`interrupted`).
import Schema from 'schemastery'
import { defineMethod } from '@dsh/web-protocol'

export type WireSubagentStatus = 'running' | 'completed' | 'failed' | 'cancelled' | 'interrupted'

export interface WireTokenUsage {
  input: number
  output: number
  cacheRead: number
  cacheWrite: number
  reasoning: number
}

/** One child of a session as the host knows it (a snapshot of `SubagentRecord`). */
export interface WireSubagent {
  id: string
  provider: string
  description: string
  depth: number
  background: boolean
  status: WireSubagentStatus
  callId?: string
  sessionId?: string
  startedAt: number
  finishedAt?: number
  usage?: WireTokenUsage
  reports?: string[]
  error?: { code: string; message: string }
}

export interface SubagentsListParams {
  sessionId: string
}
export interface SubagentsListResult {
  children: WireSubagent[]
}

export const subagentsList = defineMethod('subagents.list', {
  params: Schema.object({
    sessionId: Schema.string().min(1).required().description('Parent session id.'),
  }) as unknown as Schema<SubagentsListParams>,
  result: Schema.object({ children: Schema.array(Schema.any()) }) as unknown as Schema<SubagentsListResult>,
  description:
    'The subagents started in a session: live ones with their current status, and those its log records (one that never finished and is not live is interrupted).',
})
