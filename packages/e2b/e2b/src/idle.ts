// Idle sandboxes of the e2b world: each slot's timer is armed after the last use and disarmed
// while a remote command runs; when it fires, the slot's sandbox is paused (the next use resumes it
// through the SDK's connect, files kept) or killed after its change is saved, per `idle`.
import type { Context } from 'cordis'
import { Sandbox, SandboxNotFoundError, type SandboxOpts } from 'e2b'
import { retrying } from './calls.ts'
import { E2bError, type E2bConfig, type IdleClock, type SandboxLogEvent, type Slot } from './types.ts'
import { firstLine } from './util.ts'

/** What the idle code uses of the e2b service: its config, shared state and a few of its steps. */
export interface IdleOwner {
  readonly config: E2bConfig
  readonly home: Context
  /** The service's state object (mutated in place; `useClock` replaces its clock). */
  readonly state: { clock: IdleClock; notices: string[] }
  /** The sandboxes this run holds, and the slot each one belongs to. */
  readonly created: Map<string, Sandbox>
  readonly slotOf: Map<string, Slot>
  log(slot: Slot, event: SandboxLogEvent): void
  adopt(slot: Slot, sandbox: Sandbox): void
  /** Saves the sandbox's change and ends it `how`; answers the patch file. */
  end(sandbox: Sandbox, slot: Slot, how: E2bConfig['onExit'], reason: string): Promise<string | undefined>
  withRetries(what: string, call: () => Promise<Sandbox>): Promise<Sandbox>
  connectionOptions(): Promise<SandboxOpts>
}

/**
 * Marks `slot`'s sandbox busy (a remote command runs there) until the answered function is
 * called: an idle pause or kill never lands under a running command.
 */
export function markBusy(owner: IdleOwner, slot: Slot): () => void {
  slot.busy = (slot.busy ?? 0) + 1
  disarm(owner, slot)
  let done = false
  return () => {
    if (done) return
    done = true
    slot.busy = (slot.busy ?? 1) - 1
    touch(owner, slot)
  }
}

export function disarm(owner: IdleOwner, slot: Slot): void {
  if (slot.idleTimer === undefined) return
  owner.state.clock.clearTimeout(slot.idleTimer)
  slot.idleTimer = undefined
}

/** The last use of a slot's sandbox: the idle timer starts again from now. */
export function touch(owner: IdleOwner, slot: Slot): void {
  disarm(owner, slot)
  if (owner.config.idle.afterMs <= 0 || (slot.busy ?? 0) > 0 || !slot.current) return
  slot.idleTimer = owner.state.clock.setTimeout(() => idleOut(owner, slot), owner.config.idle.afterMs)
}

/**
 * A slot's sandbox stayed unused for `idle.afterMs`: paused (the next use resumes it through the
 * SDK's connect, files kept) or killed after its change is saved (the next use starts a new one).
 */
async function idleOut(owner: IdleOwner, slot: Slot): Promise<void> {
  slot.idleTimer = undefined
  const pending = slot.current
  if (!pending || (slot.busy ?? 0) > 0) return
  const sandbox = await pending.catch(() => undefined)
  // A use came in meanwhile, or the sandbox never opened: nothing is idle.
  if (!sandbox || slot.current !== pending || (slot.busy ?? 0) > 0 || slot.idleTimer !== undefined) return
  const { config } = owner
  const id = sandbox.sandboxId
  const seconds = Math.round(config.idle.afterMs / 1000)
  slot.current = undefined
  if (config.idle.action === 'pause') {
    try {
      await retrying(() => sandbox.pause(), config)
    } catch (error) {
      // Still running: it stays this slot's sandbox, and the timer starts again.
      slot.current = pending
      owner.home.logger('e2b').warn('sandbox %s: the idle pause failed: %s', id, (error as Error).message)
      touch(owner, slot)
      return
    }
    slot.paused = id
    owner.log(slot, {
      sandboxId: id,
      template: config.template,
      action: 'paused',
      reason: `idle for ${seconds} s`,
    })
    owner.home.logger('e2b').info('sandbox %s paused after %d s idle', id, seconds)
    return
  }
  owner.created.delete(id)
  owner.slotOf.delete(id)
  slot.sandboxId = undefined
  const file = await owner.end(sandbox, slot, 'kill', `idle for ${seconds} s`)
  owner.state.notices.push(
    `the E2B sandbox ${id} was idle for ${seconds} s and was killed (idle.action: kill)${file ? `; its change was saved to ${file}` : ''}; the next command starts a new sandbox from the local tree`,
  )
  noteFor(slot, modelNote(id, `was idle for ${seconds} s and was killed`, file !== undefined))
}

/**
 * The one line the model reads in its next request when its sandbox went away while idle: what
 * it wrote there is not in the next sandbox, which starts again from the user's local tree.
 */
export function modelNote(id: string, what: string, saved: boolean): string {
  return `Note from the e2b world: the E2B sandbox ${id} ${what}. Files you created or changed there are not in the next sandbox${saved ? ' (the user has them as a patch, not yet applied locally)' : ''}; the next command starts a new sandbox holding a fresh copy of the user's local project, so redo any change you still need.`
}

/** Leaves `note` for every session that worked in the slot's lost sandbox (the web: all of a workspace's). */
function noteFor(slot: Slot, note: string): void {
  slot.idleNote = note
  slot.idleFor = new Set(slot.users)
  slot.users = new Set()
}

/**
 * The calling slot's pending idle note for the next request of `sessionId`'s agent
 * (`agent/pre-step`): once for each session that worked in the lost sandbox, so every session of
 * a shared sandbox is told. Without a session, or when no session was seen working there, the
 * next request takes it.
 */
export function takeIdleNote(slot: Slot, sessionId?: string): string | undefined {
  if (sessionId !== undefined) (slot.users ??= new Set()).add(sessionId)
  const note = slot.idleNote
  if (note === undefined) return undefined
  const waiting = slot.idleFor
  if (waiting && waiting.size > 0 && sessionId !== undefined) {
    if (!waiting.delete(sessionId)) return undefined
    if (waiting.size === 0) slot.idleNote = undefined
    return note
  }
  slot.idleNote = undefined
  slot.idleFor = undefined
  return note
}

/** Resumes a slot's sandbox paused for idleness (the SDK's connect resumes a paused sandbox). */
export async function wake(
  owner: IdleOwner,
  slot: Slot,
  id: string,
  options: SandboxOpts,
): Promise<Sandbox | undefined> {
  slot.paused = undefined
  let sandbox: Sandbox
  try {
    sandbox = await owner.withRetries('resume', () =>
      Sandbox.connect(id, { ...options, timeoutMs: owner.config.timeoutMs }),
    )
  } catch (error) {
    const cause = error instanceof E2bError ? error.cause : error
    if (!(cause instanceof SandboxNotFoundError)) throw error
    owner.created.delete(id)
    owner.slotOf.delete(id)
    slot.sandboxId = undefined
    owner.log(slot, {
      sandboxId: id,
      template: owner.config.template,
      action: 'lost',
      reason: 'gone while paused for idleness',
    })
    noteFor(slot, modelNote(id, 'was paused while idle and is gone (killed or expired)', false))
    return undefined
  }
  owner.created.set(id, sandbox)
  owner.adopt(slot, sandbox)
  owner.log(slot, { sandboxId: id, template: owner.config.template, action: 'connected', reason: 'resumed after idle' })
  return sandbox
}

/**
 * At the end of the run: the idle timers of `slots` end, and a sandbox paused for idleness is
 * resumed so its change can be taken (one that cannot be is named in the notices).
 */
export async function wakeAll(owner: IdleOwner, slots: Iterable<Slot>): Promise<void> {
  for (const slot of slots) {
    disarm(owner, slot)
    if (slot.paused) {
      const id = slot.paused
      await wake(owner, slot, id, await owner.connectionOptions()).catch((error: unknown) => {
        owner.created.delete(id)
        owner.state.notices.push(
          `the E2B sandbox ${id}, paused while idle, could not be resumed to save its change (${firstLine((error as Error).message)}); end it with: e2b sandbox kill ${id}`,
        )
      })
    }
  }
}
