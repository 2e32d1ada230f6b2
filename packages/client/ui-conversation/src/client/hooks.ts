// Small React helpers shared by the seats: a translation function that keeps its identity while
// the language and dictionaries stay the same (so memoised rows do not re-render on every
// frame), and a frame-batched subscription to a conversation model.
//
// A model change re-renders its readers as a transition: React renders it in its own task after
// the frame that announced it, in slices that yield about every 5 ms, and never batches it into
// the synchronous render of the feed's readers (store subscriptions render synchronously, and
// React folds default-priority updates into that render). So the frame in which a turn starts or
// ends no longer renders the shell's readers and the whole chat in one task.
import { startTransition, useEffect, useReducer, useRef } from 'react'
import { frameBatcher, useT, type Translate } from '@dsh/client-runtime'
import type { ConversationModel, ConversationSnapshot } from '@dsh/conversation-model'

/** The runtime's `useT` (stable identity; the locale service is read once per component). */
export function useStableT(ns: string): Translate {
  return useT(ns)
}

function sameItems(a: readonly unknown[], b: readonly unknown[]): boolean {
  return a.length === b.length && a.every((x, i) => Object.is(x, b[i]))
}

/**
 * The model's snapshot, re-rendering (at most once per animation frame) only when `slice` of it
 * changes, compared item by item. A seat that shows a few fields (the composer: running, the
 * prompts; the panel: plan and usage) skips the frames in which only the streaming text grew.
 */
export function useSnapshotSlice(
  model: ConversationModel,
  slice: (snapshot: ConversationSnapshot) => readonly unknown[],
): ConversationSnapshot {
  const [, dispatch] = useReducer((n: number) => n + 1, 0)
  const snapshot = model.snapshot()
  const current = slice(snapshot)
  const seen = useRef(current)
  seen.current = current
  const select = useRef(slice)
  select.current = slice
  useEffect(() => {
    const check = () => {
      if (!sameItems(seen.current, select.current(model.snapshot()))) startTransition(dispatch)
    }
    const batch = frameBatcher(check)
    const off = model.subscribe(model.deferred ? check : () => batch.schedule())
    // A change between render and subscribe is picked up here.
    batch.schedule()
    return () => {
      off()
      batch.cancel()
    }
  }, [model])
  return snapshot
}

/** The model's snapshot, re-rendering at most once per animation frame. */
export function useSnapshot(model: ConversationModel): ConversationSnapshot {
  const [, dispatch] = useReducer((n: number) => n + 1, 0)
  useEffect(() => {
    const bump = () => startTransition(dispatch)
    const batch = frameBatcher(bump)
    // A deferred model already notifies once per frame: render right after that frame, not a frame later.
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
