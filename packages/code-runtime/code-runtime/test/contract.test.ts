import { describe, expect, it } from 'vitest'
import { checkRequest, formatRunResult, type CodeRunResult } from '../src/index.ts'

describe('code-runtime contract helpers', () => {
  it('checkRequest names the first problem of a malformed request', () => {
    expect(checkRequest({ code: 'return 1' })).toBeUndefined()
    expect(checkRequest(null as never)).toBe('expected a request object')
    expect(checkRequest({ code: 'x', language: 'python' as never })).toBe(
      'language must be "typescript" or "javascript", not "python"',
    )
    expect(checkRequest({ code: 'x', memoryMb: 0 })).toBe('memoryMb must be a positive number')
    expect(checkRequest({ code: 'x', bindings: { tools: { read: 'nope' as never } } })).toBe(
      'bindings.tools.read must be a function',
    )
    expect(checkRequest({ code: 'x', bindings: { tools: {} }, globals: { tools: 1 } })).toBe(
      'global "tools" collides with a binding namespace',
    )
    expect(checkRequest({ code: 'x', globals: { 'a-b': 1 } })).toBe('global "a-b" is not a JavaScript identifier')
  })

  it('formatRunResult renders logs, then the value or the failure, and cuts the middle past maxChars', () => {
    const base: CodeRunResult = { logs: [], calls: 0, durationMs: 1 }
    expect(formatRunResult(base)).toBe('Program finished; it returned nothing.')
    expect(formatRunResult({ ...base, value: 'plain' })).toBe('Return value:\nplain')
    expect(
      formatRunResult({
        ...base,
        logs: [
          { level: 'log', text: 'a' },
          { level: 'warn', text: 'b' },
        ],
        droppedLogChars: 5,
        value: [1],
      }),
    ).toBe(
      'Console output:\na\n[warn] b\n\n[... 5 more characters of console output were dropped ...]\n\nReturn value:\n[\n  1\n]',
    )
    expect(
      formatRunResult({ ...base, error: { code: 'THROWN', message: 'Error: x', stack: '    at program.ts:1:7' } }),
    ).toBe('Program failed (THROWN): Error: x\n    at program.ts:1:7')
    const long = formatRunResult({ ...base, value: 'y'.repeat(1000) }, { maxChars: 100 })
    expect(long.length).toBeLessThan(160)
    expect(long).toMatch(/\[\.\.\. \d+ characters omitted \.\.\.\]/)
  })
})
