// A session's change, offered when its turn ends (`@dsh/e2b/sessions`, for ACP and SDK clients):
// the change the session's sandbox made since its baseline is saved as a patch file, then either
// applied to the session's local folder (the same checked `git apply` as `--apply`) or kept as the
// file. Either way the baseline moves to the offered tree, so a change is offered once.
import type { Context } from 'cordis'
import type { SubprocessService } from '@dsh/subprocess'
import type { E2bReview, E2bSettled } from './contract.ts'
import { applyCommand, applyPatch } from './local-patch.ts'
import * as remote from './remote.ts'
import { E2bError, type E2bConfig, type SandboxLogEvent, type Slot } from './types.ts'
import type { Sandbox } from 'e2b'
import { patchFiles } from './util.ts'

/** What the offer uses of the e2b service: its config, shared state and a few of its steps. */
export interface ConsentOwner {
  readonly config: E2bConfig
  readonly home: Context
  readonly state: { patchDir?: string; host?: SubprocessService }
  /** Sandboxes whose starting tree was recorded (only those can produce a patch). */
  readonly baselined: Set<string>
  log(slot: Slot, event: SandboxLogEvent): void
  remote(slot?: Slot): remote.RemoteTarget
  localTree(slot?: Slot): string
  isGone(error: unknown): boolean
  lost(sandbox: Sandbox, cause?: unknown): string
  explain(error: unknown, what: string): E2bError
}

/** A change saved for consent: apply it to the local folder, or keep only the file. */
export interface Offer extends E2bReview {
  settle(action: 'apply' | 'keep'): Promise<E2bSettled>
}

/**
 * The change `slot`'s sandbox made since its baseline, saved as a patch file. Never creates a
 * sandbox: undefined when the slot has none (or none with a baseline), or nothing changed.
 */
export async function offerChange(owner: ConsentOwner, slot: Slot): Promise<Offer | undefined> {
  const sandbox = slot.current ? await slot.current.catch(() => undefined) : undefined
  if (!sandbox || !owner.baselined.has(sandbox.sandboxId)) return undefined
  const dir = owner.config.patch.dir ?? owner.state.patchDir
  if (!dir) throw new E2bError('UNAVAILABLE', 'the E2B patch directory is unknown (no patch.dir and no DSH_HOME)')
  const target = owner.remote(slot)
  const taken = await remote
    .snapshot(sandbox, target, dir, `${sandbox.sandboxId}-${Date.now().toString(36)}`)
    .catch((error: unknown) => {
      if (owner.isGone(error)) throw new E2bError('SANDBOX_LOST', owner.lost(sandbox, error), { cause: error })
      throw owner.explain(error, 'take the change of')
    })
  if (!taken) return undefined
  const local = owner.localTree(slot)
  let settled: Promise<E2bSettled> | undefined
  return {
    sandboxId: sandbox.sandboxId,
    file: taken.file,
    files: patchFiles(taken.patch),
    dir: local,
    patch: taken.patch,
    settle(action) {
      settled ??= (async () => {
        const result: E2bSettled =
          action === 'apply'
            ? await applyPatch(owner.state.host, taken.file, local)
            : {
                ok: true,
                line: `kept the patch ${taken.file}; ${local} was left as it was (apply it later with: ${await applyCommand(owner.state.host, taken.file, local)})`,
              }
        owner.log(slot, {
          sandboxId: sandbox.sandboxId,
          template: owner.config.template,
          action: 'patched',
          patch: taken.file,
        })
        // Offered once: applied, kept, or failing to apply (then the file is the way back).
        await remote
          .advanceTo(sandbox, target, taken.tree)
          .catch((error: unknown) =>
            owner.home
              .logger('e2b')
              .warn('sandbox %s: the baseline did not move: %s', sandbox.sandboxId, (error as Error).message),
          )
        return result
      })()
      return settled
    },
  }
}
