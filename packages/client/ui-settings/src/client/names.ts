// Names shared by the entry and its lazily loaded pages.
import type { Translate } from '@dsh/client-runtime'
export const NAMESPACE = 'settings'
export const SECTION_SLOT = 'settings.section'

/** A failed call as one line (the host's message; a clearer one when the browser is remote). */
export function failure(error: unknown, t: Translate): string {
  const e = error as { code?: string; message?: string }
  if (e?.code === 'FORBIDDEN') return t('keyOnlyLocal')
  return t('failed', { message: e?.message ?? String(error) })
}
