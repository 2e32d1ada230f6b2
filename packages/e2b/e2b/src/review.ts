// The web's approval of the sandbox's change while it keeps running (`e2b.review`, `e2b.apply`,
// `e2b.keep`): a review saves the change since the baseline as a patch file and records the git
// tree it was taken from; settling it applies the patch (checked, like `--apply`) or keeps it,
// then moves the sandbox's baseline to exactly the reviewed tree.
import type { Context } from 'cordis'
import type { Sandbox } from 'e2b'
import type { SubprocessService } from '@dsh/subprocess'
import { ApiError } from '@dsh/web-protocol'
import type { E2bReview, E2bSettled } from './contract.ts'
import { applyCommand, applyPatch } from './local-patch.ts'
import * as remote from './remote.ts'
import { E2bError, type E2bConfig, type SandboxLogEvent, type Slot } from './types.ts'
import { patchFiles } from './util.ts'

/** The change offered for approval and not settled yet; a new review replaces it. */
export interface PendingReview {
  file: string
  sandbox: Sandbox
  tree: string
}

/** What the review code uses of the e2b service: its config, shared state and a few of its steps. */
export interface ReviewOwner {
  readonly config: E2bConfig
  readonly home: Context
  /** The service's state object (mutated in place). */
  readonly state: { review?: PendingReview; patchDir?: string; host?: SubprocessService }
  /** The run's own slot (a review is of its sandbox). */
  readonly root: Slot
  readonly slotOf: Map<string, Slot>
  /** Sandboxes whose starting tree was recorded (only those can produce a patch). */
  readonly baselined: Set<string>
  log(slot: Slot, event: SandboxLogEvent): void
  remote(slot?: Slot): remote.RemoteTarget
  localTree(slot?: Slot): string
  isGone(error: unknown): boolean
  lost(sandbox: Sandbox, cause?: unknown): string
  explain(error: unknown, what: string): E2bError
}

/**
 * The change the run's sandbox made since its baseline (or the last settled review), saved as a
 * patch file for the user to approve while the sandbox keeps running. Never creates a sandbox:
 * undefined when there is none yet, or no change. Replaces an unsettled review.
 */
export async function takeReview(owner: ReviewOwner): Promise<E2bReview | undefined> {
  const pending = owner.root.current
  const sandbox = pending ? await pending.catch(() => undefined) : undefined
  if (!sandbox || !owner.baselined.has(sandbox.sandboxId)) return undefined
  const dir = owner.config.patch.dir ?? owner.state.patchDir
  if (!dir) throw new E2bError('UNAVAILABLE', 'the E2B patch directory is unknown (no patch.dir and no DSH_HOME)')
  const name = `${sandbox.sandboxId}-${Date.now().toString(36)}`
  const taken = await remote.snapshot(sandbox, owner.remote(), dir, name).catch((error: unknown) => {
    if (owner.isGone(error)) throw new E2bError('SANDBOX_LOST', owner.lost(sandbox, error), { cause: error })
    throw owner.explain(error, 'review the change of')
  })
  if (!taken) return undefined
  owner.state.review = { file: taken.file, sandbox, tree: taken.tree }
  return {
    sandboxId: sandbox.sandboxId,
    file: taken.file,
    files: patchFiles(taken.patch),
    dir: owner.localTree(),
    patch:
      taken.patch.length > 65_536
        ? `${taken.patch.slice(0, 65_536)}\n[... cut; the file holds all of it]\n`
        : taken.patch,
  }
}

/**
 * Settles the pending review: `apply` runs the same checked `git apply` as `--apply` (a patch
 * that does not apply changes nothing and stays offered); `keep` leaves the local tree alone and
 * the file where it is. Either way the sandbox's baseline moves to the reviewed tree.
 */
export async function settleReview(owner: ReviewOwner, file: string, action: 'apply' | 'keep'): Promise<E2bSettled> {
  const review = owner.state.review
  if (!review || review.file !== file)
    throw new ApiError(
      'REVIEW_NOT_FOUND',
      `${file} is not the change offered now (settled already, or replaced by a newer review)`,
      {
        status: 409,
        field: 'file',
      },
    )
  owner.state.review = undefined
  const local = owner.localTree()
  let result: E2bSettled
  if (action === 'apply') {
    result = await applyPatch(owner.state.host, file, local)
    if (!result.ok) {
      owner.state.review = review
      return result
    }
  } else
    result = {
      ok: true,
      line: `kept the patch ${file}; ${local} was left as it was (apply it later with: ${await applyCommand(owner.state.host, file, local)})`,
    }
  const slot = owner.slotOf.get(review.sandbox.sandboxId) ?? owner.root
  owner.log(slot, {
    sandboxId: review.sandbox.sandboxId,
    template: owner.config.template,
    action: 'patched',
    patch: file,
  })
  try {
    await remote.advanceTo(review.sandbox, owner.remote(), review.tree)
  } catch (error) {
    // The sandbox went away: nothing more will come from it, so nothing is offered twice.
    owner.home
      .logger('e2b')
      .warn('sandbox %s: the baseline did not move: %s', review.sandbox.sandboxId, (error as Error).message)
  }
  return result
}
