// Small React helpers shared by the seats: a translation function that keeps its identity while
// the language and dictionaries stay the same (so memoised rows do not re-render on every
// frame), and a frame-batched subscription to a conversation model.
import { useEffect, useMemo, useReducer } from 'react'
import { frameBatcher, useCtx, useStore, type Translate } from '@dsh/client-runtime'
import type { ConversationModel, ConversationSnapshot } from '../model/index.ts'

export function useStableT(ns: string): Translate {
  const ctx = useCtx()
  const lang = useStore(ctx.locale.current)
  const revision = useStore(ctx.locale.revision)
  return useMemo<Translate>(() => (key, vars) => ctx.locale.t(ns, key, vars, lang), [ctx, ns, lang, revision])
}

/** The model's snapshot, re-rendering at most once per animation frame. */
export function useSnapshot(model: ConversationModel): ConversationSnapshot {
  const [, bump] = useReducer((n: number) => n + 1, 0)
  useEffect(() => {
    const batch = frameBatcher(bump)
    // A deferred model already notifies once per frame: render in that frame, not the next.
    const off = model.subscribe(model.deferred ? bump : () => batch.schedule())
    // A change between render and subscribe is picked up here.
    batch.schedule()
    return () => {
      off()
      batch.cancel()
    }
  }, [model])
  return model.snapshot()
}
