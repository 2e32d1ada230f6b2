// Small React helpers shared by the seats: a translation function that keeps its identity while
// the language and dictionaries stay the same (so memoised rows do not re-render on every
// frame), and a frame-batched subscription to a conversation model.
import { useEffect, useReducer } from 'react'
import { frameBatcher, useT, type Translate } from '@dsh/client-runtime'
import type { ConversationModel, ConversationSnapshot } from '../model/index.ts'

/** The runtime's `useT` (stable identity; the locale service is read once per component). */
export function useStableT(ns: string): Translate {
  return useT(ns)
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
