// @dsh/subprocess: the process-group and terminal-process seam (`ctx.subprocess`). Definition
// only: types, the abstract service and pure helpers; providers (subprocess-local, remote
// sandboxes) implement spawning.
import { type Context, Service } from 'cordis'
import type { ProcessHandle, ScrubPolicy, SpawnSpec, TerminalHandle, TerminalSpawnSpec } from './types.ts'

export * from './types.ts'
export * from './scrub.ts'
export { decodeOutput, joinRetained } from './decode.ts'

declare module 'cordis' {
  interface Context {
    subprocess: SubprocessService
  }
}

/**
 * The seam every consumer of processes (shell executors, language servers, terminals, search
 * tools) talks to. `spawn` never throws for a process that fails to start: the handle's `exited`
 * carries `spawnError`. It throws `SubprocessError('INVALID_SPEC')` for a malformed spec and
 * `SubprocessError('DISPOSED')` after the provider unloaded.
 */
export abstract class SubprocessService extends Service {
  constructor(ctx: Context) {
    super(ctx, 'subprocess')
  }

  /** Starts `spec.file` as the leader of a new process group with explicit stdio. */
  abstract spawn(spec: SpawnSpec): ProcessHandle

  /** Starts `spec.file` attached to a new pseudo-terminal (its own session and process group). */
  abstract spawnTerminal(spec: TerminalSpawnSpec): TerminalHandle

  /** The credential scrubbing policy applied to inherited environments. */
  abstract readonly scrubPolicy: ScrubPolicy
}

export const name = 'subprocess'
export default SubprocessService
export * from './git.ts'
