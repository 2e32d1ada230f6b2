// The terminal UI's own command line.
import { describe, expect, it } from 'vitest'
import { UsageError, parseTuiArgs } from '../src/args.ts'

describe('parseTuiArgs', () => {
  it('reads -c, -r with and without an id, --model, --permission-mode and a prompt', () => {
    expect(parseTuiArgs([])).toMatchObject({ prompt: '', continue: false, resumePick: false })
    expect(parseTuiArgs(['-c'])).toMatchObject({ continue: true })
    expect(parseTuiArgs(['-r'])).toMatchObject({ resumePick: true })
    expect(parseTuiArgs(['-r', '--model', 'x'])).toMatchObject({ resumePick: true, model: 'x' })
    expect(parseTuiArgs(['-r', 'abc'])).toMatchObject({ resume: 'abc', resumePick: false })
    // The same optional-value rule as headless (@dsh/cmdline): `--resume=` is bare, `--` ends options.
    expect(parseTuiArgs(['--resume='])).toMatchObject({ resumePick: true })
    expect(parseTuiArgs(['--resume', '--', '-r'])).toMatchObject({ resumePick: true, prompt: '-r' })
    expect(parseTuiArgs(['--permission-mode', 'read-only', 'fix', 'it'])).toMatchObject({
      permissionMode: 'read-only',
      prompt: 'fix it',
    })
  })

  it('rejects unknown options and -r with -c in one line', () => {
    expect(() => parseTuiArgs(['--bogus'])).toThrow(UsageError)
    expect(() => parseTuiArgs(['--bogus'])).toThrow(/Unknown option '--bogus'/)
    expect(() => parseTuiArgs(['-c', '-r', 'x'])).toThrow(/cannot be combined/)
    expect(() => parseTuiArgs(['--model'])).toThrow(UsageError)
  })
})
