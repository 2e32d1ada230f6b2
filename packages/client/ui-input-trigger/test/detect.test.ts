// Trigger detection under the caret, range replacement and the fuzzy score.
import { describe, expect, it } from 'vitest'
import { findTrigger, fuzzyScore, hasToken, replaceRange } from '../src/shared.ts'

describe('findTrigger', () => {
  it('"/" only at the start of the input, "@" at any word boundary', () => {
    expect(findTrigger('/comp', 5)).toEqual({ char: '/', start: 0, end: 5, query: 'comp' })
    expect(findTrigger('/', 1)).toEqual({ char: '/', start: 0, end: 1, query: '' })
    expect(findTrigger('see /comp', 9)).toBeUndefined()
    expect(findTrigger('look at @src/ma', 15)).toEqual({ char: '@', start: 8, end: 15, query: 'src/ma' })
    expect(findTrigger('@', 1)).toEqual({ char: '@', start: 0, end: 1, query: '' })
    expect(findTrigger('mail me@host', 12)).toBeUndefined()
    expect(findTrigger('line one\n@a', 11)?.start).toBe(9)
  })

  it('paths, finished tokens, a caret outside the text and disabled characters are not triggers', () => {
    expect(findTrigger('/usr/bin', 8)).toBeUndefined()
    expect(findTrigger('//x', 3)).toBeUndefined()
    expect(findTrigger('@a.txt ', 7)).toBeUndefined()
    expect(findTrigger('@a', 0)).toBeUndefined()
    expect(findTrigger('@a', 9)).toBeUndefined()
    expect(findTrigger('@a', 2, ['/'])).toBeUndefined()
    // The caret in the middle of a token reads up to the caret.
    expect(findTrigger('@abc', 2)?.query).toBe('a')
  })
})

describe('replaceRange / fuzzyScore', () => {
  it('replaces the token and places the caret after the insert', () => {
    expect(replaceRange('see @ma now', 4, 7, '@src/main.ts ')).toEqual({ text: 'see @src/main.ts  now', caret: 17 })
  })

  it('matches subsequences, prefers basename, prefix and contiguous hits; rejects non-matches', () => {
    expect(fuzzyScore('xyz', 'src/main.ts')).toBeUndefined()
    expect(fuzzyScore('', 'anything')).toBe(0)
    const main = fuzzyScore('main', 'src/main.ts')!
    const spread = fuzzyScore('main', 'src/m/a/i/n.ts')!
    expect(main).toBeGreaterThan(spread)
    expect(fuzzyScore('src', 'src/a.ts')!).toBeGreaterThan(fuzzyScore('src', 'lib/x-src.ts')!)
    expect(fuzzyScore('MAIN', 'src/main.ts')).toBe(main)
  })
})

describe('hasToken (is a picked token still in the text?)', () => {
  it('matches the token as a whole word, trailing punctuation allowed', () => {
    expect(hasToken('look at @src/a.ts please', '@src/a.ts')).toBe(true)
    expect(hasToken('@src/a.ts', '@src/a.ts')).toBe(true)
    expect(hasToken('see @src/a.ts, then', '@src/a.ts')).toBe(true)
    // Edited into another word, or part of a longer path: no longer the pick.
    expect(hasToken('see @src/a.tsx', '@src/a.ts')).toBe(false)
    expect(hasToken('x@src/a.ts', '@src/a.ts')).toBe(false)
    expect(hasToken('nothing here', '@src/a.ts')).toBe(false)
    expect(hasToken('x@src/a.ts and @src/a.ts', '@src/a.ts')).toBe(true)
  })
})
