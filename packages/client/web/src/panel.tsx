// The shell's own side-panel section: the context meter (prompt tokens of the session's last
// model request, from the usage logged with each assistant message).
import { useMemo } from 'react'
import { formatCount, useT, type SessionSlotProps } from '@dsh/client-runtime'
import { NS } from './messages.ts'
import { lastPromptTokens } from './fold.ts'

export function ContextMeter({ feed }: SessionSlotProps) {
  const t = useT(NS)
  // biome-ignore lint/correctness/useExhaustiveDependencies: feed.withoutDeltas grows in place (same array); feed.version is what changes when it does
  const tokens = useMemo(() => lastPromptTokens(feed.withoutDeltas), [feed.version, feed.withoutDeltas])
  return (
    <section className="panel-section" data-testid="context-meter">
      <h3>{t('contextMeter')}</h3>
      <p className="muted">{tokens === undefined ? t('noRequest') : t('tokens', { count: formatCount(tokens) })}</p>
    </section>
  )
}
