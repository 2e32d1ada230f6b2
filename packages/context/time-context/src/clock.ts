// Zoned time rendering and parsing of the plugin's own earlier notes. Pure functions.

export interface ZonedTime {
  /** `YYYY-MM-DD` in the zone. */
  date: string
  /** `HH:MM` (24 h) in the zone. */
  time: string
  weekday: string
  /** `+HH:MM` / `-HH:MM`, `+00:00` for UTC. */
  offset: string
  zone: string
}

/** Throws a RangeError for a zone the runtime does not know. */
export function checkZone(zone: string): string {
  return new Intl.DateTimeFormat('en-US', { timeZone: zone }).resolvedOptions().timeZone
}

export function systemZone(): string {
  return new Intl.DateTimeFormat().resolvedOptions().timeZone || 'UTC'
}

export function zonedTime(epochMs: number, zone: string): ZonedTime {
  const parts = new Intl.DateTimeFormat('en-US', {
    timeZone: zone,
    year: 'numeric',
    month: '2-digit',
    day: '2-digit',
    hour: '2-digit',
    minute: '2-digit',
    hourCycle: 'h23',
    weekday: 'long',
    timeZoneName: 'longOffset',
  }).formatToParts(new Date(epochMs))
  const get = (type: Intl.DateTimeFormatPartTypes) => parts.find((p) => p.type === type)?.value ?? ''
  const gmt = get('timeZoneName') // "GMT+01:00", or "GMT" for a zero offset
  const offset = gmt === 'GMT' || gmt === '' ? '+00:00' : gmt.replace(/^GMT/, '')
  return {
    date: `${get('year')}-${get('month')}-${get('day')}`,
    time: `${get('hour')}:${get('minute')}`,
    weekday: get('weekday'),
    offset,
    zone,
  }
}

const PREFIX = 'current time: '

export function renderNote(now: ZonedTime, elapsedMs: number | undefined): string {
  const first = `${PREFIX}${now.date} ${now.time} ${now.weekday}, UTC${now.offset}, time zone ${now.zone}`
  if (elapsedMs === undefined) return first
  return `${first}\nelapsed since the previous time note: ${formatElapsed(elapsedMs)}`
}

/** Zone and local date of an earlier note; undefined when the text is not one of ours. */
export function parseNote(text: string): { date: string; zone: string } | undefined {
  if (!text.startsWith(PREFIX)) return undefined
  const match = /^current time: (\d{4}-\d{2}-\d{2}) \d{2}:\d{2} [A-Za-z]+, UTC[+-]\d{2}:\d{2}, time zone (\S+)$/m.exec(
    text,
  )
  return match ? { date: match[1], zone: match[2] } : undefined
}

/** `45 s`, `12 min`, `3 h 5 min`, `2 d 4 h`. */
export function formatElapsed(ms: number): string {
  const s = Math.max(0, Math.floor(ms / 1000))
  if (s < 60) return `${s} s`
  const min = Math.floor(s / 60)
  if (min < 60) return `${min} min`
  const h = Math.floor(min / 60)
  if (h < 24) return min % 60 ? `${h} h ${min % 60} min` : `${h} h`
  const d = Math.floor(h / 24)
  return h % 24 ? `${d} d ${h % 24} h` : `${d} d`
}
