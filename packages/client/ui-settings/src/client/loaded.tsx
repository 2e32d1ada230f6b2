// What a settings page lists from the host (plugin rows, settings sections, the provider
// catalog): the call made when the page opens, the loading and failure lines shown until it has
// an answer, a reload in which only the newest answer counts, and an in-place change of one part
// after a save. Every page shows the same two lines, so they are written once, here.
import { type ReactElement, useCallback, useEffect, useRef, useState } from 'react'
import type { Context } from 'cordis'
import { useCtx } from '@dsh/client-runtime'
import { failure, useSettingsT } from './names.ts'

export type Loaded<T> = (
  | /** Listed, and the last reload (if any) did not fail. */ { value: T; placeholder: undefined }
  | /** Still listing, or the last call failed: `placeholder` is the status or the alert line. */ {
      value: T | undefined
      placeholder: ReactElement
    }
) & {
  /** Calls `load` again; resolves (never rejects) once its answer, or its failure, is shown. */
  reload: () => Promise<void>
  /** Changes the listed value in place (a saved row or section); nothing happens before it is listed. */
  update: (change: (value: T) => T) => void
}

/**
 * Calls `load` once per page (per ctx). An answer that lands after a newer call started, or after
 * the page closed, is dropped. The failure is kept as it came and worded when shown, so a
 * language switch rewords it without asking the host again. `name` prefixes the lines' test ids.
 */
export function useLoaded<T>(load: (ctx: Context) => Promise<T>, name: string): Loaded<T> {
  const ctx = useCtx()
  const t = useSettingsT()
  const [state, setState] = useState<{ value?: T; error?: { cause: unknown } }>({})
  const latest = useRef(0)
  // The newest `load` is used: a page passes an inline function, and it must not refetch per render.
  const loader = useRef(load)
  loader.current = load
  const reload = useCallback(() => {
    const n = ++latest.current
    return loader.current(ctx).then(
      (value) => {
        if (n === latest.current) setState({ value })
      },
      (cause: unknown) => {
        if (n === latest.current) setState((s) => ({ ...s, error: { cause } }))
      },
    )
  }, [ctx])
  useEffect(() => {
    void reload()
    // Closing the page drops whatever is still on its way.
    return () => void ++latest.current
  }, [reload])
  const update = useCallback(
    (change: (value: T) => T) => setState((s) => (s.value === undefined ? s : { ...s, value: change(s.value) })),
    [],
  )
  if (state.error)
    return {
      value: state.value,
      placeholder: (
        <p className="dsh-settings-error" role="alert" data-testid={`${name}-error`}>
          {failure(state.error.cause, t)}
        </p>
      ),
      reload,
      update,
    }
  if (state.value === undefined)
    return {
      value: undefined,
      placeholder: (
        <p className="dsh-settings-muted" role="status" aria-busy="true" data-testid={`${name}-loading`}>
          {t('loading')}
        </p>
      ),
      reload,
      update,
    }
  return { value: state.value, placeholder: undefined, reload, update }
}
