// The age the terminal faces' session lists show.
import { describe, expect, it } from 'vitest'
import { formatAge } from '../src/index.ts'

describe('formatAge', () => {
  const now = 1_800_000_000_000
  it('names the largest whole unit', () => {
    expect(formatAge(now - 59_000, now)).toBe('just now')
    expect(formatAge(now - 60_000, now)).toBe('1m ago')
    expect(formatAge(now - 5 * 60_000, now)).toBe('5m ago')
    expect(formatAge(now - 3 * 3_600_000 - 59 * 60_000, now)).toBe('3h ago')
    expect(formatAge(now - 2 * 86_400_000, now)).toBe('2d ago')
  })
  it('reads a time in the future as just now', () => {
    expect(formatAge(now + 90_000, now)).toBe('just now')
  })
})
