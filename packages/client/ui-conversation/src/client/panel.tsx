// Side-panel sections from the conversation model: the agent's plan (the latest todo_write list)
// and the context figures (tokens of the last request, the session's totals, the model).
// Both re-render only when what they show changes (not on every streamed delta).
import { memo } from 'react'
import { formatCount as fmt } from '@dsh/client-runtime'
import type { ConversationSnapshot } from '@dsh/conversation-model'
import type { Translate } from './strings.ts'

type SectionProps = { snapshot: ConversationSnapshot; t: Translate }
const samePlan = (a: SectionProps, b: SectionProps) => a.t === b.t && a.snapshot.todos === b.snapshot.todos
const sameContext = (a: SectionProps, b: SectionProps) =>
  a.t === b.t &&
  a.snapshot.usage === b.snapshot.usage &&
  a.snapshot.lastInputTokens === b.snapshot.lastInputTokens &&
  a.snapshot.model?.provider === b.snapshot.model?.provider &&
  a.snapshot.model?.model === b.snapshot.model?.model

export const PlanSection = memo(function PlanSection({ snapshot, t }: SectionProps) {
  if (!snapshot.todos || snapshot.todos.length === 0) return null
  return (
    <section className="dsh-panel-section" data-panel="plan">
      <h3>{t('panel.plan')}</h3>
      <ul className="dsh-panel-todo">
        {snapshot.todos.map((todo, i) => (
          <li key={todo.id ?? i} data-status={todo.status}>
            <span aria-hidden="true">
              {todo.status === 'completed' ? '✔' : todo.status === 'in_progress' ? '◐' : '○'}
            </span>
            <span className="dsh-panel-todo-text">{todo.content}</span>
            <span className="dsh-sr-only"> ({t(`todo.${todo.status}`)})</span>
          </li>
        ))}
      </ul>
    </section>
  )
}, samePlan)

export const ContextSection = memo(function ContextSection({ snapshot, t }: SectionProps) {
  if (snapshot.lastInputTokens === undefined && !snapshot.model) return null
  const u = snapshot.usage
  return (
    <section className="dsh-panel-section" data-panel="context">
      <h3>{t('panel.context')}</h3>
      {snapshot.lastInputTokens !== undefined ? (
        <div data-tokens={snapshot.lastInputTokens}>
          {t('panel.lastRequest', { tokens: fmt(snapshot.lastInputTokens) })}
        </div>
      ) : null}
      <div className="dsh-muted">
        {t('panel.totals', {
          input: fmt(u.input + u.cacheRead + u.cacheWrite),
          output: fmt(u.output + u.reasoning),
          cached: fmt(u.cacheRead),
        })}
      </div>
      {snapshot.model ? (
        <div className="dsh-muted">
          {t('panel.model', { model: `${snapshot.model.provider}/${snapshot.model.model}` })}
        </div>
      ) : null}
    </section>
  )
}, sameContext)
