// The sandbox vocabulary of the `ctx.fs` seam, merged into @dsh/fs's call options so the file tools
// can ask for an escalation without importing a provider (the same shape as the shell's).
import type {} from '@dsh/fs'
import type { SandboxMode } from './index.ts'
import type { SandboxEscalationRequest } from './shell.ts'

declare module '@dsh/fs' {
  interface FsCallOptions {
    /**
     * Ask the user to allow this one change outside the writable roots (confining providers only).
     * A provider that honours it asks `ctx.approval` for exactly this path and operation; without
     * an allowed answer the change is refused as before.
     */
    sandboxEscalation?: SandboxEscalationRequest
    /** The tool call making the change (`ToolCallContext.callId`), named by an escalation approval. */
    callId?: string
  }
}

/** JSON Schema of the optional `sandbox_escalation` argument the file tools add over a confining filesystem. */
export const FILE_ESCALATION_PARAMETER = {
  type: 'object',
  properties: { justification: { type: 'string', minLength: 1, description: 'Why, for the user who approves.' } },
  required: ['justification'],
  additionalProperties: false,
  description: 'Only after this change was refused as outside the writable roots: ask the user to allow it once.',
} as const

/** The capability a confining `ctx.fs` exposes; a file tool checks for it before adding `sandbox_escalation`. */
export interface SandboxedFsCapability {
  sandboxMode(sessionId?: string): SandboxMode
}

export function isSandboxedFs(fs: unknown): fs is SandboxedFsCapability {
  return typeof (fs as { sandboxMode?: unknown } | null)?.sandboxMode === 'function'
}
