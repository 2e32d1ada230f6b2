// @dsh/ui-goal/client: the GoalBar, a strip in the conversation header showing the session goal
// (objective, status, rounds and tokens against the budgets) with edit, pause / resume and clear.
// The goal is folded from the session feed (the last `goal/set` event): no store of its own.
// Each mutation reads the compare-and-set revision from the feed at call time, runs one at a time
// (a ref, so two clicks in one frame cannot both go), and shows a refusal inline.
import type { Context } from 'cordis'
import { useMemo, useRef, useState, type KeyboardEvent } from 'react'
import { installStyles, useCtx, useT, type SessionSlotProps } from '@dsh/client-runtime'
import { goalsClear, goalsEdit, goalsPause, goalsResume, type WireGoal } from '../contract.ts'
import { en, zh } from './strings.ts'

export const NAMESPACE = 'goal'
export const name = '@dsh/ui-goal'
export const inject = ['slots', 'locale', 'remote', 'connection']

interface LoggedEvent {
  type: string
  data: unknown
}

/** The session's current goal: the value of its last `goal/set` event. */
export function goalOf(events: readonly LoggedEvent[]): WireGoal | null {
  for (let i = events.length - 1; i >= 0; i--) {
    if (events[i].type === 'goal/set') return (events[i].data as { goal: WireGoal | null }).goal
  }
  return null
}

const CSS = `
.dsh-goalbar { display: inline-flex; align-items: center; gap: 6px; max-width: 46vw; font-size: 12px; padding: 2px 8px; border: 1px solid var(--border, #ddd); border-radius: 12px; }
.dsh-goalbar-objective { overflow: hidden; text-overflow: ellipsis; white-space: nowrap; max-width: 22vw; }
.dsh-goalbar-meta { color: var(--fg-muted, #666); white-space: nowrap; }
.dsh-goalbar button { font-size: 12px; padding: 0 6px; }
.dsh-goalbar input { font-size: 12px; min-width: 16em; }
.dsh-goalbar-error { color: var(--danger, #c0362c); }
`

export function apply(ctx: Context): void {
  ctx.locale.register(NAMESPACE, { en, zh })
  installStyles(ctx, name, CSS, 'ui-goal: stylesheet')

  function GoalBar({ sessionId, feed }: SessionSlotProps) {
    const c = useCtx()
    const t = useT(NAMESPACE)
    // biome-ignore lint/correctness/useExhaustiveDependencies: feed.withoutDeltas grows in place (same array); feed.version is what changes when it does
    const goal = useMemo(() => goalOf(feed.withoutDeltas as readonly LoggedEvent[]), [feed.version, feed.withoutDeltas])
    const [error, setError] = useState<string | undefined>(undefined)
    const [draft, setDraft] = useState<string | undefined>(undefined)
    const [cleared, setCleared] = useState<string | undefined>(undefined)
    const busy = useRef(false)
    if (!goal || goal.status === 'complete' || cleared === goal.id) return null

    const act = async (kind: 'pause' | 'resume' | 'clear' | 'edit', objective?: string) => {
      if (busy.current) return
      busy.current = true
      setError(undefined)
      const events = (c.connection.peek(sessionId)?.get().withoutDeltas ?? feed.withoutDeltas) as readonly LoggedEvent[]
      const current = goalOf(events)
      try {
        if (!current) return
        const ref = { sessionId, expectedRevision: current.revision }
        if (kind === 'pause') await c.remote.call(goalsPause, ref)
        else if (kind === 'resume') await c.remote.call(goalsResume, ref)
        else if (kind === 'edit') {
          await c.remote.call(goalsEdit, { ...ref, objective: objective! })
          setDraft(undefined)
        } else {
          await c.remote.call(goalsClear, ref)
          setCleared(current.id)
        }
      } catch (failure) {
        setError((failure as Error).message)
      } finally {
        busy.current = false
      }
    }
    const onKey = (e: KeyboardEvent<HTMLInputElement>) => {
      if (e.key === 'Enter' && draft?.trim()) void act('edit', draft.trim())
      if (e.key === 'Escape') setDraft(undefined)
    }
    const rounds =
      goal.maxRounds !== undefined
        ? t('rounds', { rounds: goal.rounds, max: goal.maxRounds })
        : t('roundsOpen', { rounds: goal.rounds })
    return (
      <div
        className="dsh-goalbar"
        data-goal={goal.id}
        data-goal-status={goal.status}
        title={goal.note ?? goal.objective}
      >
        <strong>{t('label')}</strong>
        {draft === undefined ? (
          <span className="dsh-goalbar-objective" data-goal-objective="true">
            {goal.objective}
          </span>
        ) : (
          <input
            aria-label={t('objective')}
            value={draft}
            // biome-ignore lint/a11y/noAutofocus: the field appears when the user asked to edit the objective; the focus goes where they are about to type
            autoFocus
            onChange={(e) => setDraft(e.target.value)}
            onKeyDown={onKey}
          />
        )}
        <span className="dsh-goalbar-meta" data-goal-meta="true">
          {t(`status_${goal.status}`)} · {rounds}
          {goal.maxTokens !== undefined ? ` · ${t('tokens', { tokens: goal.tokens, max: goal.maxTokens })}` : ''}
        </span>
        {draft === undefined ? (
          <>
            <button type="button" data-goal-action="edit" onClick={() => setDraft(goal.objective)}>
              {t('edit')}
            </button>
            {goal.status === 'active' ? (
              <button type="button" data-goal-action="pause" onClick={() => void act('pause')}>
                {t('pause')}
              </button>
            ) : null}
            {goal.status === 'paused' ? (
              <button type="button" data-goal-action="resume" onClick={() => void act('resume')}>
                {t('resume')}
              </button>
            ) : null}
            <button type="button" data-goal-action="clear" onClick={() => void act('clear')}>
              {t('clear')}
            </button>
          </>
        ) : (
          <>
            <button
              type="button"
              data-goal-action="save"
              disabled={!draft.trim()}
              onClick={() => void act('edit', draft.trim())}
            >
              {t('save')}
            </button>
            <button type="button" data-goal-action="cancel" onClick={() => setDraft(undefined)}>
              {t('cancel')}
            </button>
          </>
        )}
        {error ? (
          <span className="dsh-goalbar-error" role="alert" data-goal-error="true">
            {error}
          </span>
        ) : null}
      </div>
    )
  }

  ctx.slots.register('conversation.header.pickers', { id: 'ui-goal', order: 10, component: GoalBar })
}

export default { name, inject, apply }
