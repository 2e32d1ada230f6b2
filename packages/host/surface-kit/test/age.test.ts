// The age column and the session table the terminal faces' session lists show.
import { describe, expect, it } from 'vitest'
import { formatAge, sessionTable } from '../src/index.ts'

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

describe('sessionTable', () => {
  const now = 1_800_000_000_000
  const rows = [
    { id: 'a1', cwd: '/w', createdAt: now - 120_000, turns: 3, title: 'fix   the\nbuild' },
    { id: 'b22', cwd: '/long/dir', createdAt: now, updatedAt: now, turns: 12, firstPrompt: 'x'.repeat(80) },
    { id: 'c3', cwd: '/w', createdAt: now, turns: 0, damaged: 'BAD_HEADER: not JSON' },
    { id: 'd4', cwd: '/w', createdAt: now, turns: 1 },
  ]
  it('pads every column but the last, right-aligns TURNS, and flattens and cuts titles', () => {
    expect(sessionTable(rows, false, now)).toBe(
      [
        'ID   UPDATED   TURNS  TITLE',
        'a1   2m ago        3  fix the build',
        `b22  just now     12  ${'x'.repeat(57)}...`,
        'c3   just now      0  (damaged: BAD_HEADER: not JSON)',
        'd4   just now      1  (no prompt)',
        '',
      ].join('\n'),
    )
  })
  it('adds the CWD column for lists across directories', () => {
    expect(sessionTable(rows.slice(0, 2), true, now).split('\n')[0]).toBe('ID   UPDATED   TURNS  CWD        TITLE')
  })
})
