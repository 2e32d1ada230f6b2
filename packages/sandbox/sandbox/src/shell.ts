// The sandbox vocabulary of the `ctx.shell` seam, merged into @dsh/shell's types so a consumer
// (tool-bash) can pass a session and an escalation request without importing a provider.
import type {} from '@dsh/shell'
import type { SandboxDenial, SandboxEnforcement, SandboxMode, SandboxPolicy } from './index.ts'

/** What the model asks for when a confined command must run outside the sandbox. */
export interface SandboxEscalationRequest {
  /** One or two sentences for the human: why the command needs to run unconfined. */
  justification: string
}

/** Sandbox facts a confining executor stamps on a resolved spec. */
export interface ShellSandboxSpec {
  policy: SandboxPolicy
  sessionId?: string
  /** The tool call running the command; an escalation approval names it (its deadline pauses). */
  callId?: string
  escalation?: SandboxEscalationRequest
}

/** Sandbox facts of a settled command. */
export interface ShellSandboxResult {
  mode: SandboxMode
  runner: string
  enforcement: SandboxEnforcement
  /** Set when the output looks like the sandbox refused something. */
  denial?: SandboxDenial
  /** Set when an escalation was requested: the approval decision, and whether the command ran unconfined. */
  escalation?: { decision: string; unconfined: boolean; reason?: string }
}

declare module '@dsh/shell' {
  interface ShellRequest {
    /** The session the call acts for; selects its sandbox policy. Default: `env.DSH_SESSION_ID`. */
    sessionId?: string
    /** The tool call running the command (`ToolCallContext.callId`), named by an escalation approval. */
    callId?: string
    /** Ask the user to run this command outside the sandbox (confining executors only). */
    sandboxEscalation?: SandboxEscalationRequest
  }
  interface ShellSpec {
    sandbox?: ShellSandboxSpec
  }
  interface ShellResult {
    sandbox?: ShellSandboxResult
  }
}

/** JSON Schema of the optional `sandbox_escalation` tool argument a bash tool adds for a confining executor. */
export const SANDBOX_ESCALATION_PARAMETER = {
  type: 'object',
  properties: {
    justification: {
      type: 'string',
      minLength: 1,
      description:
        'Why this command must run outside the sandbox, in one or two sentences for the user who approves it.',
    },
  },
  required: ['justification'],
  additionalProperties: false,
  description:
    'Only after a command failed because the sandbox blocked it: run the same command outside the sandbox. The user is asked to approve this one command; if they refuse, it does not run.',
} as const

/** The capability a confining `ctx.shell` exposes; a bash tool checks for it before adding `sandbox_escalation`. */
export interface SandboxedShellCapability {
  sandboxMode(sessionId?: string): SandboxMode
}

export function isSandboxedShell(shell: unknown): shell is SandboxedShellCapability {
  return typeof (shell as { sandboxMode?: unknown } | null)?.sandboxMode === 'function'
}
