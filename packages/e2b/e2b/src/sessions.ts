// @dsh/e2b/sessions: the e2b world for surfaces whose sessions each name their folder (ACP's
// `session/new` cwd, the SDK server's sessions). A session's tool calls run in the sandbox of its
// own folder (`ctx.e2b.within`: one sandbox per folder, holding an upload of it), and when one of
// its turns leaves a change there the user is asked through the approval seam (ACP's
// `session/request_permission`, the SDK's `approval/requested`): allowed, the patch is applied to
// that folder (checked, all or nothing); declined, unanswered or failed, it is only kept as a file.
import type { Context } from 'cordis'
import type {} from '@dsh/agent'
import type {} from '@dsh/tools'
import type {} from '@dsh/user-approval'
import type {} from './index.ts'

export const name = 'e2b-sessions'
export const inject = ['e2b']

/** The approval kind of the question, for answerers and logs. */
export const APPROVAL_KIND = 'e2b-apply'

export function apply(ctx: Context): void {
  let approval: Context['approval'] | undefined
  ctx.inject(['approval'], (inner) => {
    approval = inner.approval
    return () => void (approval = undefined)
  })
  // Outermost, so the tool body and every wrapper run with the session folder's sandbox.
  ctx.on('tools/execute', (payload, next) => ctx.e2b.within(payload.context.cwd, next), { prepend: true })
  ctx.on('agent/turn-stopping', async ({ agent, reason }) => {
    // A cancelled prompt is not asked anything; a child's change comes back when it ends.
    if (reason === 'cancelled' || agent.session.events[0]?.type === 'subagent/link') return
    if (!approval) return
    const logger = ctx.logger('e2b')
    try {
      const offer = await ctx.e2b.offer(agent.cwd)
      if (!offer) return
      const files = offer.files.join(', ') || 'no file names'
      const outcome = await approval.request({
        sessionId: agent.session.id,
        agentId: agent.id,
        kind: APPROVAL_KIND,
        title: `Apply the E2B sandbox's change to ${offer.dir}? (${files})`,
        detail: `The turn changed ${offer.files.length} file(s) in the E2B sandbox ${offer.sandboxId}: ${files}. Allow applies the change to ${offer.dir} (git apply, checked first: all or nothing); Reject keeps it only as the patch ${offer.file}.\n\n${offer.patch.length > 16_384 ? `${offer.patch.slice(0, 16_384)}\n[... cut; the file holds all of it]` : offer.patch}`,
        action: { sandboxId: offer.sandboxId, file: offer.file, dir: offer.dir, files: offer.files },
        options: ['allowed-once', 'rejected'],
        labels: { 'allowed-once': `Apply it to ${offer.dir}`, rejected: 'Keep the patch file only' },
      })
      // Only a person's yes applies: a policy standing in for nobody, an error or a timeout keeps.
      const yes = (outcome.decision === 'allowed-once' || outcome.decision === 'allowed-always') && !outcome.noHuman
      const settled = await offer.settle(yes ? 'apply' : 'keep')
      const why = yes || outcome.decision === 'rejected' ? '' : ` (not applied: ${outcome.reason ?? outcome.decision})`
      process.stderr.write(`dsh: ${settled.line}${why}\n`)
    } catch (error) {
      // Never fails the turn: the change stays in the sandbox and comes back at the end.
      logger.warn('the change of the session %s could not be offered: %s', agent.session.id, (error as Error).message)
    }
  })
}
