// @dsh/e2b/sandbox: the `ctx.sandbox` provider of the e2b world. Commands already run in a remote
// E2B sandbox (ctx.subprocess is served from it), and that machine is the confinement: there is no
// local runner to wrap them in, so `wrap` hands the argv back as it is, and `describe` states the
// confinement for the policy text the model sees (instead of this machine's writable roots).
import type { Context } from 'cordis'
import { SandboxService, type SandboxInvocation, type SandboxRunnerInfo, type SandboxWrapRequest } from '@dsh/sandbox'

/** What the model is told about the e2b world's confinement (the policy announcement). */
export const E2B_CONFINEMENT =
  "e2b world: commands and file edits run in a remote E2B sandbox, a separate Linux machine holding an uploaded copy of this project at the same path. That sandbox is the confinement: inside it commands may write anywhere and use the network as the sandbox allows, and nothing you run reaches the user's machine. Credential files (.env, .credentials.yaml, private keys) and .git were not uploaded; do not try to recreate them. Your changes reach the user's working tree only as a patch the user reviews and applies; the user's approval rules for actions still hold."

export class E2bSandboxService extends SandboxService {
  override readonly confinement = E2B_CONFINEMENT

  constructor(ctx: Context) {
    super(ctx)
  }

  async describe(): Promise<SandboxRunnerInfo> {
    return { runner: 'e2b', rejected: [], notes: [], confinement: this.confinement }
  }

  /** The command runs as given: the remote sandbox it is spawned in is its confinement. */
  async wrap(request: SandboxWrapRequest): Promise<SandboxInvocation> {
    return {
      argv: [...request.argv],
      runner: 'e2b',
      enforcement: 'enforced',
      mode: request.policy.mode,
      notes: [],
    }
  }
}

export const name = 'e2b-sandbox'
export default E2bSandboxService
