// @dsh/ui-subagent (host half): the `subagents.list` method over `ctx.subagents` (when both the
// api gateway and the subagent seam are mounted); the row also makes the host serve the browser
// half (`./client`): the Subagents section of the side panel and the subagent tool card.
import type { Context } from 'cordis'
import Schema from 'schemastery'
import type {} from '@dsh/api-gateway'
import type { SubagentRecord } from '@dsh/subagent'
import { subagentsList, type WireSubagent } from './contract.ts'

export * from './contract.ts'
export * from './fold.ts'

export const name = '@dsh/ui-subagent'
export type UiSubagentConfig = Record<string, never>
export const Config: Schema<UiSubagentConfig> = Schema.object({}) as Schema<UiSubagentConfig>

/** A record as the wire carries it (no agent ids, no answer text: the log has those). */
export function toWire(record: SubagentRecord): WireSubagent {
  return {
    id: record.id,
    provider: record.provider,
    description: record.description,
    depth: record.depth,
    background: record.background,
    status: record.status,
    startedAt: record.startedAt,
    ...(record.callId !== undefined ? { callId: record.callId } : {}),
    ...(record.sessionId !== undefined ? { sessionId: record.sessionId } : {}),
    ...(record.finishedAt !== undefined ? { finishedAt: record.finishedAt } : {}),
    ...(record.usage ? { usage: { ...record.usage } } : {}),
    ...(record.reports?.length ? { reports: [...record.reports] } : {}),
    ...(record.error ? { error: { code: record.error.code, message: record.error.message } } : {}),
  }
}

export function apply(ctx: Context): void {
  ctx.inject(['api', 'subagents'], (inner) => {
    inner.api.register(subagentsList, (p) => ({ children: inner.subagents.list(p.sessionId).map(toWire) }))
  })
}

export default { name, Config, apply }
