// A translation function bound to a namespace that keeps its identity while the language and
// the dictionaries stay the same (memoised cards and rows then skip re-rendering). The runtime's
// `useT` does this (and reads the locale service once per component, not through Cordis'
// tracing proxies on every render); this name stays for the package's callers.
import { useT, type Translate } from '@dsh/client-runtime'

export function useStableT(ns: string): Translate {
  return useT(ns)
}
