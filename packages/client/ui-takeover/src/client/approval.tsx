// The approval takeover: replaces the composer while an approval request is pending. Three
// answers (allow once, allow for this session, deny with an optional reason), offered as the
// request's `options` allow. Nothing is pre-selected and no button has focus at first, so a
// stray Enter answers nothing: the heading takes focus.
import { useEffect, useRef, useState } from 'react'
import type { ApprovalChoice } from '@dsh/web-protocol'
import type { PendingApproval } from '@dsh/conversation-model'
import type { Translate } from './strings.ts'

export interface ApprovalTakeoverProps {
  approval: PendingApproval
  /** Requests waiting behind this one. */
  more?: number
  t: Translate
  onRespond: (decision: ApprovalChoice, reason?: string) => Promise<unknown> | unknown
  onStop?: () => void
}

const KINDS = ['command', 'write', 'network', 'tool']

export function ApprovalTakeover({ approval, more = 0, t, onRespond, onStop }: ApprovalTakeoverProps) {
  const { request } = approval
  const [denying, setDenying] = useState(false)
  const [reason, setReason] = useState('')
  const [busy, setBusy] = useState(false)
  const [error, setError] = useState<string | undefined>(undefined)
  const heading = useRef<HTMLHeadingElement>(null)
  const reasonInput = useRef<HTMLTextAreaElement>(null)

  // biome-ignore lint/correctness/useExhaustiveDependencies: resets the form and moves focus when a different approval request is shown
  useEffect(() => {
    heading.current?.focus()
    setDenying(false)
    setReason('')
    setError(undefined)
    // The answer to the previous request left the buttons disabled; this one is not answered yet.
    setBusy(false)
  }, [approval.requestId])
  useEffect(() => {
    if (denying) reasonInput.current?.focus()
  }, [denying])

  const respond = async (decision: ApprovalChoice, why?: string) => {
    setBusy(true)
    setError(undefined)
    try {
      await onRespond(decision, why)
    } catch (e) {
      setError(t('failed', { message: e instanceof Error ? e.message : String(e) }))
      setBusy(false)
    }
  }

  const options = request.options.length ? request.options : ['allowed-once', 'allowed-always', 'rejected']
  const kind = KINDS.includes(request.kind) ? t(`approval.kind.${request.kind}`) : t('approval.kind.other')
  return (
    <div
      className="dsh-takeover dsh-approval"
      role="alertdialog"
      aria-labelledby={`approval-${approval.requestId}`}
      data-request={approval.requestId}
    >
      <div className="dsh-takeover-kicker">
        {t('approval.heading')} · {kind}
        {more > 0 ? ` · ${t('approval.pending', { count: more })}` : ''}
      </div>
      <h3 id={`approval-${approval.requestId}`} ref={heading} tabIndex={-1} className="dsh-takeover-title">
        {request.title}
      </h3>
      {request.detail ? <div className="dsh-takeover-detail">{request.detail}</div> : null}
      <details className="dsh-takeover-action">
        <summary>{t('approval.action')}</summary>
        <pre>{JSON.stringify(request.action, null, 2)}</pre>
      </details>
      {denying ? (
        <div className="dsh-takeover-deny">
          <label>
            <span>{t('approval.reason')}</span>
            <textarea
              ref={reasonInput}
              value={reason}
              rows={2}
              placeholder={t('approval.reasonPlaceholder')}
              onChange={(e) => setReason(e.target.value)}
              onKeyDown={(e) => {
                if (e.key === 'Enter' && !e.shiftKey && !e.nativeEvent.isComposing) {
                  e.preventDefault()
                  void respond('rejected', reason.trim() || undefined)
                } else if (e.key === 'Escape') {
                  e.preventDefault()
                  setDenying(false)
                }
              }}
            />
          </label>
          <div className="dsh-takeover-buttons">
            <button type="button" className="dsh-button" onClick={() => setDenying(false)} disabled={busy}>
              {t('approval.back')}
            </button>
            <button
              type="button"
              className="dsh-button dsh-button-danger"
              onClick={() => void respond('rejected', reason.trim() || undefined)}
              disabled={busy}
            >
              {t('approval.denyWithReason')}
            </button>
          </div>
        </div>
      ) : (
        <div className="dsh-takeover-buttons">
          {options.includes('allowed-once') ? (
            <button
              type="button"
              className="dsh-button dsh-button-primary"
              onClick={() => void respond('allowed-once')}
              disabled={busy}
            >
              {t('approval.allowOnce')}
            </button>
          ) : null}
          {options.includes('allowed-always') ? (
            <button type="button" className="dsh-button" onClick={() => void respond('allowed-always')} disabled={busy}>
              {t('approval.allowSession')}
            </button>
          ) : null}
          {options.includes('rejected') ? (
            <button
              type="button"
              className="dsh-button dsh-button-danger"
              onClick={() => setDenying(true)}
              disabled={busy}
            >
              {t('approval.deny')}
            </button>
          ) : null}
          {onStop ? (
            <button type="button" className="dsh-link-button dsh-takeover-stop" onClick={onStop}>
              {t('stopTurn')}
            </button>
          ) : null}
        </div>
      )}
      {error ? (
        <div className="dsh-takeover-error" role="alert">
          {error}
        </div>
      ) : null}
    </div>
  )
}
