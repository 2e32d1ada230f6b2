// @dsh/ui-agent-preset/client: the session's agent preset in the composer
// (`conversation.composer.tools`). Before the session's first turn it is a picker (it records the
// choice through `presets.select`); afterwards a read-only label, since a session keeps its preset.
import type { Context } from 'cordis'
import { useEffect, useMemo, useState } from 'react'
import { useCtx, useStore, type SessionSlotProps } from '@dsh/client-runtime'
import { presetsList, presetsSelect, type PresetsListResult } from '../contract.ts'

export const name = '@dsh/ui-agent-preset'
export const inject = ['slots', 'locale', 'remote']
export const NAMESPACE = 'agentPreset'

export const en = {
  label: 'Agent preset',
  preset: 'Preset: {name}',
  fixed: 'A session keeps the preset it started with',
  failed: 'Preset not changed: {message}',
}
export const zh = {
  label: '代理预设',
  preset: '预设：{name}',
  fixed: '会话保持其开始时的预设',
  failed: '未更换预设：{message}',
}

interface LoggedEvent {
  type: string
  data?: unknown
}

/** The recorded preset and whether the session has started a turn, from its log. */
export function presetState(events: readonly LoggedEvent[]): { recorded?: string; started: boolean } {
  let recorded: string | undefined
  let started = false
  for (const event of events) {
    if (event.type === 'preset/selected') recorded = (event.data as { name?: string } | undefined)?.name
    else if (event.type === 'turn/start') started = true
  }
  return { ...(recorded ? { recorded } : {}), started }
}

export function apply(ctx: Context): void {
  ctx.locale.register(NAMESPACE, { en, zh })
  ctx.slots.register('conversation.composer.tools', { id: 'ui-agent-preset', order: 5, component: PresetSeat })
}

export interface PresetPickerProps {
  names: string[]
  current: string
  locked: boolean
  t: (key: string, vars?: Record<string, string>) => string
  onSelect: (name: string) => void
}

export function PresetPicker({ names, current, locked, t, onSelect }: PresetPickerProps) {
  if (locked)
    return (
      <span className="dsh-agent-preset dsh-muted" data-testid="agent-preset" data-locked="true" title={t('fixed')}>
        {t('preset', { name: current })}
      </span>
    )
  return (
    <select
      className="dsh-agent-preset"
      data-testid="agent-preset"
      data-locked="false"
      aria-label={t('label')}
      value={current}
      onChange={(e) => onSelect(e.target.value)}
    >
      {(names.includes(current) ? names : [current, ...names]).map((n) => (
        <option key={n} value={n}>
          {t('preset', { name: n })}
        </option>
      ))}
    </select>
  )
}

function PresetSeat({ sessionId, feed }: SessionSlotProps) {
  const ctx = useCtx()
  const lang = useStore(ctx.locale.current)
  const t = (key: string, vars?: Record<string, string>) => ctx.locale.t(NAMESPACE, key, vars, lang)
  const [roster, setRoster] = useState<PresetsListResult>()
  const [error, setError] = useState<string>()
  // biome-ignore lint/correctness/useExhaustiveDependencies: feed.withoutDeltas grows in place (same array); feed.version is what changes when it does
  const state = useMemo(
    () => presetState(feed.withoutDeltas as readonly LoggedEvent[]),
    [feed.version, feed.withoutDeltas],
  )
  useEffect(() => {
    let live = true
    ctx.remote.call(presetsList, { sessionId }).then(
      (result) => live && setRoster(result),
      () => {},
    )
    return () => {
      live = false
    }
  }, [ctx, sessionId])
  if (!roster) return null
  const current = state.recorded ?? roster.current ?? roster.default
  const select = async (name: string) => {
    setError(undefined)
    try {
      await ctx.remote.call(presetsSelect, { sessionId, name })
      setRoster({ ...roster, current: name })
    } catch (e) {
      setError(t('failed', { message: (e as Error).message }))
    }
  }
  return (
    <span className="dsh-agent-preset-seat" data-testid="composer-agent-preset">
      <PresetPicker
        names={roster.presets.map((p) => p.name)}
        current={current}
        locked={state.started}
        t={t}
        onSelect={(name) => void select(name)}
      />
      {error ? (
        <span className="dsh-agent-preset-error" role="alert">
          {error}
        </span>
      ) : null}
    </span>
  )
}

export default { name, inject, apply }
