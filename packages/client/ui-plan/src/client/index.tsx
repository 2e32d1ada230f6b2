// @dsh/ui-plan/client: a plan-mode chip in the composer (`conversation.composer.tools`). It shows
// whether the session plans (a fold of its `plan/mode` events) and toggles plan mode through the
// `/plan` command; the plan review itself arrives as the ordinary question takeover.
import type { Context } from 'cordis'
import { useMemo, useState } from 'react'
import { useCtx, useStore, type SessionSlotProps } from '@dsh/client-runtime'

export const name = '@dsh/ui-plan'
export const inject = ['slots', 'locale', 'remote']
export const NAMESPACE = 'plan'

export const en = {
  on: 'Plan mode',
  off: 'Plan',
  enter: 'Enter plan mode: the agent proposes a plan before changing anything',
  leave: 'Leave plan mode',
  failed: 'Plan mode not changed: {message}',
}
export const zh = {
  on: '计划模式',
  off: '计划',
  enter: '进入计划模式：代理先提出计划，获批后才改动',
  leave: '退出计划模式',
  failed: '未切换计划模式：{message}',
}

interface LoggedEvent {
  type: string
  data?: unknown
}

/** Whether the log says the session plans: its last `plan/mode` event. */
export function planActive(events: readonly LoggedEvent[]): boolean {
  for (let i = events.length - 1; i >= 0; i--) {
    if (events[i].type === 'plan/mode') return (events[i].data as { active?: unknown } | undefined)?.active === true
  }
  return false
}

export function apply(ctx: Context): void {
  ctx.locale.register(NAMESPACE, { en, zh })
  ctx.slots.register('conversation.composer.tools', { id: 'ui-plan', order: 10, component: PlanSeat })
}

export interface PlanChipProps {
  active: boolean
  busy: boolean
  t: (key: string) => string
  onToggle: () => void
}

export function PlanChip({ active, busy, t, onToggle }: PlanChipProps) {
  return (
    <button
      type="button"
      className={`dsh-plan-chip${active ? ' active' : ''}`}
      data-testid="plan-chip"
      data-active={active ? 'true' : 'false'}
      aria-pressed={active}
      title={t(active ? 'leave' : 'enter')}
      disabled={busy}
      onClick={onToggle}
    >
      {t(active ? 'on' : 'off')}
    </button>
  )
}

function PlanSeat({ sessionId, feed }: SessionSlotProps) {
  const ctx = useCtx()
  const lang = useStore(ctx.locale.current)
  const t = (key: string, vars?: Record<string, string>) => ctx.locale.t(NAMESPACE, key, vars, lang)
  // biome-ignore lint/correctness/useExhaustiveDependencies: feed.withoutDeltas grows in place (same array); feed.version is what changes when it does
  const active = useMemo(
    () => planActive(feed.withoutDeltas as readonly LoggedEvent[]),
    [feed.version, feed.withoutDeltas],
  )
  const [busy, setBusy] = useState(false)
  const [error, setError] = useState<string>()
  const toggle = async () => {
    setBusy(true)
    setError(undefined)
    try {
      const result = await ctx.remote.call('commands.execute', { sessionId, line: active ? '/plan off' : '/plan' })
      if (!result.ok) setError(t('failed', { message: result.error?.message ?? 'failed' }))
    } catch (e) {
      setError(t('failed', { message: (e as Error).message }))
    } finally {
      setBusy(false)
    }
  }
  return (
    <span className="dsh-plan" data-testid="composer-plan">
      <PlanChip active={active} busy={busy} t={t} onToggle={() => void toggle()} />
      {error ? (
        <span className="dsh-plan-error" role="alert">
          {error}
        </span>
      ) : null}
    </span>
  )
}

export default { name, inject, apply }
