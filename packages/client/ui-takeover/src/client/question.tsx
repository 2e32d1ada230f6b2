// The `ask_user_question` takeover: every question of the batch with its options (radio for
// one, checkboxes for many) and a free-text field; nothing is picked by default and the answers
// go only when every question has one.
import { useEffect, useRef, useState } from 'react'
import type { WireQuestionAnswer } from '@dsh/web-protocol'
import type { PendingQuestion } from '@dsh/conversation-model'
import { buildAnswers, emptyForm, isAnswered, setText, toggleOption, type QuestionFormState } from '../answers.ts'
import type { Translate } from './strings.ts'

export interface QuestionTakeoverProps {
  pending: PendingQuestion
  t: Translate
  onSubmit: (answers: Record<string, WireQuestionAnswer>) => Promise<unknown> | unknown
  onStop?: () => void
}

export function QuestionTakeover({ pending, t, onSubmit, onStop }: QuestionTakeoverProps) {
  const [form, setForm] = useState<QuestionFormState>(emptyForm)
  const [busy, setBusy] = useState(false)
  const [error, setError] = useState<string | undefined>(undefined)
  const heading = useRef<HTMLDivElement>(null)
  // biome-ignore lint/correctness/useExhaustiveDependencies: resets the form and moves focus when a different question request is shown
  useEffect(() => {
    setForm(emptyForm())
    setError(undefined)
    heading.current?.focus()
  }, [pending.requestId])

  const complete = pending.questions.every((q) => isAnswered(form, q))
  const submit = async () => {
    if (!complete || busy) return
    setBusy(true)
    setError(undefined)
    try {
      await onSubmit(buildAnswers(pending.questions, form))
    } catch (e) {
      setError(t('failed', { message: e instanceof Error ? e.message : String(e) }))
      setBusy(false)
    }
  }

  return (
    <form
      className="dsh-takeover dsh-question"
      role="dialog"
      aria-label={t('question.heading')}
      data-request={pending.requestId}
      onSubmit={(e) => {
        e.preventDefault()
        void submit()
      }}
    >
      <div className="dsh-takeover-kicker" ref={heading} tabIndex={-1}>
        {t('question.heading')}
      </div>
      {pending.questions.map((q) => {
        const options = q.options ?? []
        const name = `q-${pending.requestId}-${q.id}`
        return (
          <fieldset key={q.id} className="dsh-question-item" data-question={q.id}>
            <legend>
              {q.header ? <span className="dsh-badge">{q.header}</span> : null}
              <span className="dsh-question-text">{q.question}</span>
            </legend>
            {options.length > 0 ? (
              <div className="dsh-muted">{q.multiSelect ? t('question.multi') : t('question.single')}</div>
            ) : null}
            {options.map((option) => {
              const checked = (form.selected[q.id] ?? []).includes(option.label)
              return (
                <label key={option.label} className="dsh-question-option">
                  <input
                    type={q.multiSelect ? 'checkbox' : 'radio'}
                    name={name}
                    checked={checked}
                    onChange={() => setForm((s) => toggleOption(s, q, option.label))}
                    onClick={(e) => {
                      // A second click on the picked radio clears it (radios cannot otherwise).
                      if (!q.multiSelect && checked) {
                        e.preventDefault()
                        setForm((s) => toggleOption(s, q, option.label))
                      }
                    }}
                  />
                  <span className="dsh-question-label">{option.label}</span>
                  {option.description ? <span className="dsh-muted"> — {option.description}</span> : null}
                </label>
              )
            })}
            <label className="dsh-question-free">
              <span className="dsh-sr-only">{options.length > 0 ? t('question.comment') : t('question.other')}</span>
              <textarea
                rows={options.length > 0 ? 1 : 2}
                placeholder={options.length > 0 ? t('question.comment') : t('question.other')}
                value={form.text[q.id] ?? ''}
                onChange={(e) => {
                  const value = e.target.value
                  setForm((s) => setText(s, q, value))
                }}
              />
            </label>
          </fieldset>
        )
      })}
      <div className="dsh-takeover-buttons">
        <button
          type="submit"
          className="dsh-button dsh-button-primary"
          disabled={!complete || busy}
          title={complete ? undefined : t('question.unanswered')}
        >
          {busy ? t('sending') : t('question.submit')}
        </button>
        {!complete ? <span className="dsh-muted">{t('question.unanswered')}</span> : null}
        {onStop ? (
          <button type="button" className="dsh-link-button dsh-takeover-stop" onClick={onStop}>
            {t('stopTurn')}
          </button>
        ) : null}
      </div>
      {error ? (
        <div className="dsh-takeover-error" role="alert">
          {error}
        </div>
      ) : null}
    </form>
  )
}
