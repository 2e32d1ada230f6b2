// How long ago a stored session was touched, as the session lists of the terminal faces show it.

/** "just now", "5m ago", "3h ago", "2d ago" (whole units, rounded down; a future time is "just now"). */
export function formatAge(then: number, now: number = Date.now()): string {
  const seconds = Math.max(0, Math.round((now - then) / 1000))
  if (seconds < 60) return 'just now'
  if (seconds < 3600) return `${Math.floor(seconds / 60)}m ago`
  if (seconds < 86_400) return `${Math.floor(seconds / 3600)}h ago`
  return `${Math.floor(seconds / 86_400)}d ago`
}
