// formatCount: the digit grouping the views use for token counts (instead of toLocaleString).
import { describe, expect, it } from 'vitest'
import { formatCount } from '../src/index.ts'

describe('formatCount', () => {
  it('groups digits by three like the en and zh locales', () => {
    for (const n of [0, 7, 999, 1000, 12345, 1234567, 987654321012, -9876, -1000]) {
      expect(formatCount(n)).toBe(n.toLocaleString('en-US'))
    }
  })
  it('rounds fractions to two decimals and leaves odd values readable', () => {
    expect(formatCount(1.5)).toBe('1.5')
    expect(formatCount(1234.567)).toBe('1,234.57')
    expect(formatCount(2.999)).toBe('3')
    expect(formatCount(-0.001)).toBe('0')
    expect(formatCount(Number.NaN)).toBe('NaN')
    expect(formatCount(Number.POSITIVE_INFINITY)).toBe('Infinity')
    expect(formatCount(1e22)).toBe('1e+22')
  })
})
