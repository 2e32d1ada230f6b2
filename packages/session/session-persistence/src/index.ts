// @dsh/session-persistence: the durable session-log seam (`ctx.sessionPersistence`), crash repair
// as pure functions, and the glue (`ctx.durableSessions`) that persists the sessions of `ctx.sessions`.
export * from './types.ts'
export { planRepair, describeRepairs, REPAIR_TEXT, type RepairPlan } from './repair.ts'
export { SummaryBuilder, summarize, sortSummaries } from './summary.ts'
export { BatchWriter } from './batch.ts'
export {
  SessionPersistence,
  CORE_EVENT_TYPES,
  normalizeHeader,
  parseHeader,
  recordProblem,
  type BackendReadResult,
  type EventTypeOptions,
  type PersistenceBaseConfig,
} from './service.ts'
export { DurableSessions, type DurableSessionsConfig, type ResumeResult } from './glue.ts'
import { DurableSessions } from './glue.ts'

export const name = '@dsh/session-persistence'
/** The profile row of this package mounts the glue; backends provide `ctx.sessionPersistence`. */
export default DurableSessions
