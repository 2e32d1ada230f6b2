// A translation function bound to a namespace that keeps its identity while the language and
// the dictionaries stay the same (memoised cards and rows then skip re-rendering).
import { useMemo } from 'react'
import { useCtx, useStore, type Translate } from '@dsh/client-runtime'

export function useStableT(ns: string): Translate {
  const ctx = useCtx()
  const lang = useStore(ctx.locale.current)
  const revision = useStore(ctx.locale.revision)
  return useMemo<Translate>(() => (key, vars) => ctx.locale.t(ns, key, vars, lang), [ctx, ns, lang, revision])
}
