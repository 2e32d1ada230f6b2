// @dsh/ui-takeover/client: the approval and question takeovers. The shell renders the
// `conversation.composer.takeover` entry keyed `approval` (or `question`) instead of the composer
// while the session has one pending; answers go through approvals.respond / questions.respond.
import type { Context } from 'cordis'
import { installStyles, type SessionSlotProps } from '@dsh/client-runtime'
import type { PendingApproval as RuntimeApproval, PendingQuestion as RuntimeQuestion } from '@dsh/client-runtime'
import type { ApprovalChoice, WireQuestionAnswer } from '@dsh/web-protocol'
import { ApprovalTakeover } from './approval.tsx'
import { QuestionTakeover } from './question.tsx'
import { en, zh } from './strings.ts'
import { CSS } from './styles.ts'
import { useStableT } from './use-t.ts'

export { ApprovalTakeover, type ApprovalTakeoverProps } from './approval.tsx'
export { QuestionTakeover, type QuestionTakeoverProps } from './question.tsx'
export * from '../answers.ts'
export { en, zh, translator } from './strings.ts'

export const NAMESPACE = 'takeover'
export const name = '@dsh/ui-takeover'
export const inject = ['slots', 'locale', 'remote']

type TakeoverProps = SessionSlotProps & { approval?: RuntimeApproval; question?: RuntimeQuestion }

export function apply(ctx: Context): void {
  ctx.locale.register(NAMESPACE, { en, zh })
  installStyles(ctx, name, CSS, 'ui-takeover: stylesheet')

  const stop = (sessionId: string) => () => void ctx.remote.call('sessions.cancel', { sessionId }).catch(() => {})

  function ApprovalSeat({ sessionId, feed, approval }: TakeoverProps) {
    const t = useStableT(NAMESPACE)
    const current = approval ?? feed.approvals[0]
    if (!current) return null
    const respond = (decision: ApprovalChoice, reason?: string) =>
      ctx.remote.call('approvals.respond', { requestId: current.requestId, decision, ...(reason ? { reason } : {}) })
    return (
      <ApprovalTakeover
        approval={current}
        more={Math.max(0, feed.approvals.length - 1)}
        t={t}
        onRespond={respond}
        onStop={stop(sessionId)}
      />
    )
  }

  function QuestionSeat({ sessionId, feed, question }: TakeoverProps) {
    const t = useStableT(NAMESPACE)
    const current = question ?? feed.questions[0]
    if (!current) return null
    const submit = (answers: Record<string, WireQuestionAnswer>) =>
      ctx.remote.call('questions.respond', { requestId: current.requestId, answers })
    return <QuestionTakeover pending={current} t={t} onSubmit={submit} onStop={stop(sessionId)} />
  }

  ctx.slots.register('conversation.composer.takeover', {
    id: 'ui-takeover',
    key: 'approval',
    order: 0,
    component: ApprovalSeat,
  })
  ctx.slots.register('conversation.composer.takeover', {
    id: 'ui-takeover',
    key: 'question',
    order: 0,
    component: QuestionSeat,
  })
}

export default { name, inject, apply }
