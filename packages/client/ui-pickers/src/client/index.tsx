// @dsh/ui-pickers/client: the session's model (with reasoning effort) and permission mode, in
// the conversation header (`conversation.header.pickers`). Choices go to sessions.setModel and
// sessions.setPermissionMode; the host's session/changed updates the catalog row they read.
import type { Context } from 'cordis'
import { useState } from 'react'
import type { SessionSlotProps } from '@dsh/client-runtime'
import type { ReasoningEffort, SessionRow, WireModel } from '@dsh/web-protocol'
import { ModelPicker, PermissionPicker } from './pickers.tsx'
import { en, zh } from './strings.ts'
import { CSS } from './styles.ts'
import { useStableT } from './use-t.ts'

export {
  ModelPicker,
  PermissionPicker,
  EFFORTS,
  BUILTIN_MODES,
  RISKY_MODES,
  type ModelPickerProps,
  type PermissionPickerProps,
} from './pickers.tsx'
export { en, zh, translator } from './strings.ts'

export const NAMESPACE = 'pickers'
export const name = '@dsh/ui-pickers'
export const inject = ['slots', 'locale', 'remote', 'catalog']

export function apply(ctx: Context): void {
  ctx.locale.register(NAMESPACE, { en, zh })
  ctx.effect(() => {
    if (typeof document === 'undefined') return () => {}
    const style = document.createElement('style')
    style.dataset.owner = name
    style.textContent = CSS
    document.head.append(style)
    return () => style.remove()
  }, 'ui-pickers: stylesheet')
  let providers: Promise<{ providers: string[]; default?: WireModel }> | undefined
  const models = new Map<string, Promise<string[]>>()
  // Cached for the page: the catalog of models does not change while it is open.
  const listProviders = () =>
    (providers ??= ctx.remote.call('llm.providers', {}).catch((e: unknown) => {
      providers = undefined
      throw e
    }))
  const listModels = (provider: string) => {
    let found = models.get(provider)
    if (!found) {
      found = ctx.remote.call('llm.models', { provider }).then((r) => r.models.map((m) => m.id))
      found.catch(() => models.delete(provider))
      models.set(provider, found)
    }
    return found
  }
  const refresh = (row: SessionRow | undefined) => {
    if (row) ctx.catalog.upsert(row)
  }

  function ModelSeat({ sessionId, row }: SessionSlotProps) {
    const t = useStableT(NAMESPACE)
    // The row updates through the host stream; until then show what was chosen.
    const [picked, setChosen] = useState<{ sessionId: string; model: WireModel } | undefined>(undefined)
    const chosen = picked?.sessionId === sessionId ? picked.model : undefined
    const current =
      chosen &&
      (!row?.model ||
        row.model.model !== chosen.model ||
        row.model.provider !== chosen.provider ||
        row.model.reasoningEffort !== chosen.reasoningEffort)
        ? chosen
        : row?.model
    const onSelect = async (model: string, reasoningEffort?: ReasoningEffort) => {
      // Show the choice at once; the host's answer (or its refusal) settles it.
      const slash = model.indexOf('/')
      const before = picked
      setChosen({
        sessionId,
        model: {
          provider: model.slice(0, slash),
          model: model.slice(slash + 1),
          ...(reasoningEffort ? { reasoningEffort } : {}),
        },
      })
      let result: { model: WireModel }
      try {
        result = await ctx.remote.call('sessions.setModel', {
          sessionId,
          model,
          ...(reasoningEffort ? { reasoningEffort } : {}),
        })
      } catch (error) {
        setChosen(before)
        throw error
      }
      setChosen({ sessionId, model: result.model })
      if (row) refresh({ ...row, model: result.model })
    }
    return (
      <ModelPicker
        t={t}
        {...(current ? { current } : {})}
        listProviders={listProviders}
        listModels={listModels}
        onSelect={onSelect}
      />
    )
  }

  function ModeSeat({ sessionId, row }: SessionSlotProps) {
    const t = useStableT(NAMESPACE)
    const [picked, setChosen] = useState<{ sessionId: string; mode: string } | undefined>(undefined)
    const current = (picked?.sessionId === sessionId ? picked.mode : undefined) ?? row?.permissionMode
    const onSelect = async (mode: string) => {
      const result = await ctx.remote.call('sessions.setPermissionMode', { sessionId, mode })
      setChosen({ sessionId, mode: result.mode })
      if (row) refresh({ ...row, permissionMode: result.mode })
    }
    return <PermissionPicker key={sessionId} t={t} {...(current ? { current } : {})} onSelect={onSelect} />
  }

  ctx.slots.register('conversation.header.pickers', { id: 'ui-pickers-model', order: 0, component: ModelSeat })
  ctx.slots.register('conversation.header.pickers', { id: 'ui-pickers-mode', order: 10, component: ModeSeat })
}

export default { name, inject, apply }
