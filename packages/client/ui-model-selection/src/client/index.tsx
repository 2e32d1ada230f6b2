// @dsh/ui-model-selection/client: the session's model and reasoning effort, chosen inside the
// composer (`conversation.composer.tools`). The list is fetched when the picker is focused, so a
// provider or endpoint added in Settings shows up without reloading the page.
import type { Context } from 'cordis'
import { useEffect, useRef, useState } from 'react'
import { useCtx, useStore, type SessionSlotProps } from '@dsh/client-runtime'
import type { ReasoningEffort, WireModel } from '@dsh/web-protocol'

export const name = '@dsh/ui-model-selection'
export const inject = ['slots', 'locale', 'remote', 'catalog']
export const NAMESPACE = 'modelSelection'

const EFFORTS: ReasoningEffort[] = ['off', 'low', 'high', 'max']

const en = {
  model: 'Model',
  effort: 'Reasoning effort',
  effortDefault: 'effort: default',
  loading: 'Loading models…',
  failed: 'Model not changed: {message}',
}
const zh = {
  model: '模型',
  effort: '推理强度',
  effortDefault: '强度：默认',
  loading: '正在加载模型…',
  failed: '未更换模型：{message}',
}

interface Directory {
  groups: { provider: string; models: string[] }[]
}

/** Every routed provider with its models (a provider that fails to list shows empty). */
export async function loadDirectory(ctx: Context): Promise<Directory> {
  const { providers } = await ctx.remote.call('llm.providers', {})
  const groups = await Promise.all(
    providers.map(async (provider) => {
      try {
        return { provider, models: (await ctx.remote.call('llm.models', { provider })).models.map((m) => m.id) }
      } catch {
        return { provider, models: [] }
      }
    }),
  )
  return { groups }
}

export function apply(ctx: Context): void {
  ctx.locale.register(NAMESPACE, { en, zh })
  ctx.slots.register('conversation.composer.tools', { id: 'ui-model-selection', order: 0, component: ModelSeat })
}

function ModelSeat({ sessionId, row }: SessionSlotProps) {
  const ctx = useCtx()
  const lang = useStore(ctx.locale.current)
  const t = (key: string, vars?: Record<string, string>) => ctx.locale.t(NAMESPACE, key, vars, lang)
  const [directory, setDirectory] = useState<Directory>()
  const [chosen, setChosen] = useState<{ sessionId: string; model: WireModel }>()
  const [error, setError] = useState<string>()
  const loading = useRef<Promise<void> | undefined>(undefined)
  const current = (chosen?.sessionId === sessionId ? chosen.model : undefined) ?? row?.model
  const refresh = () => {
    loading.current ??= loadDirectory(ctx)
      .then(setDirectory, () => {})
      .finally(() => {
        loading.current = undefined
      })
  }
  useEffect(refresh, [ctx])
  const select = async (model: string, reasoningEffort?: ReasoningEffort) => {
    setError(undefined)
    // Shown at once (a quick second change builds on it); the host's answer settles it.
    const before = chosen
    const slash = model.indexOf('/')
    setChosen({
      sessionId,
      model: {
        provider: model.slice(0, slash),
        model: model.slice(slash + 1),
        ...(reasoningEffort ? { reasoningEffort } : {}),
      },
    })
    try {
      const result = await ctx.remote.call('sessions.setModel', {
        sessionId,
        model,
        ...(reasoningEffort ? { reasoningEffort } : {}),
      })
      setChosen({ sessionId, model: result.model })
      if (row) ctx.catalog.upsert({ ...row, model: result.model })
    } catch (e) {
      setChosen(before)
      setError(t('failed', { message: (e as Error).message }))
    }
  }
  const value = current ? `${current.provider}/${current.model}` : ''
  const groups = directory?.groups ?? []
  const listed = groups.some((g) => g.provider === current?.provider && g.models.includes(current.model))
  return (
    <span className="dsh-model-selection" data-testid="composer-model">
      <select
        aria-label={t('model')}
        value={value}
        onFocus={refresh}
        onMouseDown={refresh}
        onChange={(e) => void select(e.target.value, current?.reasoningEffort)}
        data-testid="composer-model-select"
      >
        {!directory ? <option value={value}>{current?.model ?? t('loading')}</option> : null}
        {directory && current && !listed ? <option value={value}>{current.model}</option> : null}
        {groups.map((g) => (
          <optgroup key={g.provider} label={g.provider}>
            {g.models.map((m) => (
              <option key={m} value={`${g.provider}/${m}`}>
                {m}
              </option>
            ))}
          </optgroup>
        ))}
      </select>
      <select
        aria-label={t('effort')}
        value={current?.reasoningEffort ?? ''}
        disabled={!current}
        onChange={(e) => current && void select(value, (e.target.value || undefined) as ReasoningEffort | undefined)}
      >
        <option value="">{t('effortDefault')}</option>
        {EFFORTS.map((effort) => (
          <option key={effort} value={effort}>
            {effort}
          </option>
        ))}
      </select>
      {error ? (
        <span className="dsh-model-selection-error" role="alert">
          {error}
        </span>
      ) : null}
    </span>
  )
}

export default { name, inject, apply }
