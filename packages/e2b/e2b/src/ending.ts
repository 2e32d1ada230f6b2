// Ending one sandbox of the e2b world: at the end of the run, of a subagent's lease or of an idle
// time (its change saved as a patch, then killed, paused or kept), and after an interrupted
// preparation (forgotten and killed at once). A sandbox left running is never silent: its id is
// named in the run's notices.
import type { Context } from 'cordis'
import type { Sandbox } from 'e2b'
import { retrying, tries } from './calls.ts'
import * as remote from './remote.ts'
import { E2bError, type E2bConfig, type SandboxLogEvent, type Slot } from './types.ts'
import { firstLine } from './util.ts'

/** What ending a sandbox uses of the e2b service: its config, shared state and a few of its steps. */
export interface EndingOwner {
  readonly config: E2bConfig
  readonly home: Context
  /** The service's state object (mutated in place). */
  readonly state: { notices: string[]; interrupted: boolean }
  /** The sandboxes this run holds, and the slot each one belongs to. */
  readonly created: Map<string, Sandbox>
  readonly slotOf: Map<string, Slot>
  /** Sandboxes whose starting tree was recorded (only those can produce a patch). */
  readonly baselined: Set<string>
  log(slot: Slot, event: SandboxLogEvent): void
  savePatch(sandbox: Sandbox, slot?: Slot): Promise<string | undefined>
  remote(slot?: Slot): remote.RemoteTarget
}

/** Saves the sandbox's change (when it has a baseline) and ends it per `onExit`; answers the patch file. */
export async function endSandbox(
  owner: EndingOwner,
  sandbox: Sandbox,
  slot: Slot,
  how: E2bConfig['onExit'] = owner.config.onExit,
  reason?: string,
): Promise<string | undefined> {
  const { config } = owner
  let file: string | undefined
  if (config.patch.enabled && owner.baselined.has(sandbox.sandboxId)) {
    try {
      file = await owner.savePatch(sandbox, slot)
      if (file)
        owner.log(slot, {
          sandboxId: sandbox.sandboxId,
          template: config.template,
          action: 'patched',
          patch: file,
        })
      // A sandbox that outlives the run (paused or kept, for --continue) starts its next patch here.
      if (file && how !== 'kill') await remote.advanceBaseline(sandbox, owner.remote(slot))
    } catch (error) {
      owner.home
        .logger('e2b')
        .warn('sandbox %s: the patch could not be saved: %s', sandbox.sandboxId, (error as Error).message)
    }
  }
  if (how === 'keep') return file
  try {
    if (how === 'pause') await retrying(() => sandbox.pause(), config)
    else await retrying(() => sandbox.kill(), config)
    owner.log(slot, {
      sandboxId: sandbox.sandboxId,
      template: config.template,
      action: how === 'pause' ? 'paused' : 'killed',
      ...(reason ? { reason } : {}),
    })
    owner.home.logger('e2b').info('sandbox %s %s', sandbox.sandboxId, how === 'pause' ? 'paused' : 'killed')
  } catch (error) {
    // Never silent: a sandbox left running bills until its timeout, so the user gets its id.
    const why = `${firstLine(error instanceof Error ? error.message : String(error))}${tries(error, config.retries)}`
    const until = `${Math.round(config.timeoutMs / 1000)} s after its last use`
    owner.state.notices.push(
      how === 'pause'
        ? `the E2B sandbox ${sandbox.sandboxId} could not be paused (${why}); it runs until its timeout (${until}) and is then killed, so its files are lost; to end it now: e2b sandbox kill ${sandbox.sandboxId}`
        : `the E2B sandbox ${sandbox.sandboxId} could not be killed (${why}); it runs until its timeout (${until}); to end it now: e2b sandbox kill ${sandbox.sandboxId}`,
    )
    owner.home.logger('e2b').warn('sandbox %s could not be ended: %s', sandbox.sandboxId, why)
  }
  return file
}

/**
 * A sandbox whose preparation the app's stop interrupted (Ctrl-C during the upload): nothing of
 * it is kept. It is forgotten by the run (no patch, no end-of-run kill), killed now, logged as
 * killed, and one line tells the user (naming the id when the kill failed, so it can be ended
 * by hand; `finish()` reports it). Answers the error the waiting callers get.
 */
export async function abandon(
  owner: EndingOwner,
  slot: Slot,
  sandbox: Sandbox,
  phase: string,
  cause: unknown,
): Promise<E2bError> {
  const id = sandbox.sandboxId
  owner.created.delete(id)
  owner.slotOf.delete(id)
  if (slot.sandboxId === id) slot.sandboxId = undefined
  owner.state.interrupted = true
  const killed = await retrying(() => sandbox.kill(), owner.config).then(
    () => undefined,
    (error: unknown) => (error instanceof Error ? error.message : String(error)).split('\n')[0],
  )
  const reason = `interrupted while ${phase}`
  if (killed === undefined) {
    owner.log(slot, { sandboxId: id, template: owner.config.template, action: 'killed', reason })
    owner.state.notices.push(`${reason}; the E2B sandbox ${id} created for it was killed`)
  } else
    owner.state.notices.push(
      `${reason}; the E2B sandbox ${id} created for it could not be killed (${killed}); kill it yourself (e2b sandbox kill ${id}) or it runs until its timeout`,
    )
  return new E2bError(
    'INTERRUPTED',
    `${reason}; the E2B sandbox ${id} was ${killed === undefined ? 'killed' : 'left running'}`,
    {
      cause,
    },
  )
}

/**
 * Forgets `sandbox` after a call found it gone (killed or expired): its slot opens a fresh one on
 * the next use (`onLost: recreate`) or is stopped for the run (`stop`). Returns the sentence for the
 * caller's result.
 */
export function loseSandbox(owner: EndingOwner, sandbox: Sandbox, cause?: unknown): string {
  const id = sandbox.sandboxId
  const reason = cause instanceof Error ? cause.message.split('\n')[0] : undefined
  const slot = owner.slotOf.get(id)
  if (slot && slot.sandboxId === id) {
    slot.current = undefined
    slot.sandboxId = undefined
    owner.created.delete(id)
    owner.slotOf.delete(id)
    owner.log(slot, { sandboxId: id, template: owner.config.template, action: 'lost', ...(reason ? { reason } : {}) })
    if (owner.config.onLost === 'stop') {
      slot.stopped = new E2bError(
        'STOPPED',
        `the E2B sandbox ${id} is gone (killed or expired) and onLost is "stop": no further remote commands run in this session`,
      )
    }
  }
  return owner.config.onLost === 'stop'
    ? `the E2B sandbox ${id} stopped (killed or expired) while this ran; the e2b world is stopped for this run`
    : `the E2B sandbox ${id} stopped (killed or expired) while this ran; the next command starts a new sandbox (files written there so far are lost)`
}
