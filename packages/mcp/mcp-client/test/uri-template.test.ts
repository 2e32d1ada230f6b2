// The URI templates of MCP resource templates (RFC 6570, string values): the variables the form
// asks for and the URI a filled form inserts.
import { describe, expect, it } from 'vitest'
import { expandTemplate, firstEmptyVariable, templateVariables } from '../src/uri-template.ts'

describe('resource template URIs', () => {
  it('names each variable once, in order', () => {
    expect(templateVariables('notes://day/{day}')).toEqual(['day'])
    expect(templateVariables('search://{kind}/q{?query,limit}{&query}')).toEqual(['kind', 'query', 'limit'])
    expect(templateVariables('file:///{+path}{#frag}')).toEqual(['path', 'frag'])
    expect(templateVariables('x://{name:3}/{list*}')).toEqual(['name', 'list'])
    expect(templateVariables('plain://no-variables')).toEqual([])
  })

  it('expands each operator, encoding what the expression must not carry literally', () => {
    expect(expandTemplate('notes://day/{day}', { day: 'monday' })).toBe('notes://day/monday')
    expect(expandTemplate('notes://day/{day}', { day: 'a b/c' })).toBe('notes://day/a%20b%2Fc')
    expect(expandTemplate('file:///{+path}', { path: 'src/a b.ts' })).toBe('file:///src/a%20b.ts')
    expect(expandTemplate('s://x{?q,n}', { q: 'cats & dogs', n: '5' })).toBe('s://x?q=cats%20%26%20dogs&n=5')
    expect(expandTemplate('s://x{?q}{&n}', { q: '', n: '2' })).toBe('s://x?q=&n=2')
    expect(expandTemplate('s://x{/a,b}{.ext}{;p}{#f}', { a: '1', b: '2', ext: 'md', p: 'v', f: 'top' })).toBe(
      's://x/1/2.md;p=v#top',
    )
    expect(expandTemplate('s://{name:3}', { name: 'abcdef' })).toBe('s://abc')
    expect(expandTemplate('s://{a}{?b}', { a: 'x' })).toBe('s://x')
  })

  it('finds the first blank variable', () => {
    expect(firstEmptyVariable('s://{a}/{b}', { a: 'x', b: '  ' })).toBe('b')
    expect(firstEmptyVariable('s://{a}/{b}', { b: 'y' })).toBe('a')
    expect(firstEmptyVariable('s://{a}/{b}', { a: 'x', b: 'y' })).toBeUndefined()
  })
})
