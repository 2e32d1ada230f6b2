// Names shared by the entry and its lazily loaded pages.
import { useMemo } from 'react'
import { useCtx, useStore, type Translate } from '@dsh/client-runtime'
export const NAMESPACE = 'settings'
export const SECTION_SLOT = 'settings.section'

/** A failed call as one line (the host's message; a clearer one when the browser is remote). */
export function failure(error: unknown, t: Translate): string {
  const e = error as { code?: string; message?: string }
  if (e?.code === 'FORBIDDEN') return t('keyOnlyLocal')
  return t('failed', { message: e?.message ?? String(error) })
}

/** `t` of the settings namespace that keeps its identity while the language and dictionaries stay the same. */
export function useSettingsT(): Translate {
  const ctx = useCtx()
  const lang = useStore(ctx.locale.current)
  const revision = useStore(ctx.locale.revision)
  // biome-ignore lint/correctness/useExhaustiveDependencies: revision changes when dictionaries load; ctx.locale.t reads them, so t must get a new identity then
  return useMemo<Translate>(() => (key, vars) => ctx.locale.t(NAMESPACE, key, vars, lang), [ctx, lang, revision])
}
