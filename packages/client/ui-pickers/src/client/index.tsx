// @dsh/ui-pickers/client: the session's permission mode, in the composer's control group
// (`conversation.composer.tools`, beside the model, effort and preset), applied with
// sessions.setPermissionMode. The model picker component stays exported (`ModelPicker`) for
// other pages, but is not mounted: @dsh/ui-model-selection is the page's one model picker.
// The host's session/changed updates the catalog row the pickers read.
import type { Context } from 'cordis'
import { useState } from 'react'
import { installStyles, type SessionSlotProps } from '@dsh/client-runtime'
import type { SessionRow } from '@dsh/web-protocol'
import { PermissionPicker } from './pickers.tsx'
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
  installStyles(ctx, name, CSS, 'ui-pickers: stylesheet')
  const refresh = (row: SessionRow | undefined) => {
    if (row) ctx.catalog.upsert(row)
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

  // One control group for the session, in the composer: model and effort (ui-model-selection,
  // order 0), preset (5), plan (10), then the permission mode here.
  ctx.slots.register('conversation.composer.tools', { id: 'ui-pickers-mode', order: 20, component: ModeSeat })
}

export default { name, inject, apply }
