// The flags both terminal faces take (the one-shot `dsh -p` and the TUI) are parsed once, by
// @dsh/surface-kit's parseFaceArgs/sharedOptions: one table of each shared flag, what a good value
// gives and the one-line error of a bad one, run against both faces' parsers. Only the help
// command named in the hint differs.
import { describe, expect, it } from 'vitest'
import { parseHeadlessArgs, UsageError as HeadlessUsageError } from '@dsh/headless-runner'
import { SHARED_FLAGS, UsageError as KitUsageError } from '@dsh/surface-kit'
import { parseTuiArgs, UsageError } from '../src/args.ts'

const faces = [
  ['one-shot', parseHeadlessArgs, 'dsh -p --help'],
  ['tui', parseTuiArgs, 'dsh --profile tui --help'],
] as const

/** argv -> the shared options it must give (a subset match). */
const good: Array<[string[], Record<string, unknown>]> = [
  [[], { continue: false, resumePick: false, help: false }],
  [['-c'], { continue: true }],
  [['--continue'], { continue: true }],
  [['-r', 'abc'], { resume: 'abc', resumePick: false }],
  [['--resume=abc'], { resume: 'abc', resumePick: false }],
  [['-r'], { resumePick: true }],
  [['--resume='], { resumePick: true }],
  [['-r', '--model', 'p/m'], { resumePick: true, model: 'p/m' }],
  [['--model', 'p/m'], { model: 'p/m' }],
  [['--model', 'a', '--model', 'b'], { model: 'b' }],
  [['--permission-mode', 'read-only'], { permissionMode: 'read-only' }],
  [['--permission-mode=danger-full-access'], { permissionMode: 'danger-full-access' }],
  [['-h'], { help: true }],
  [['--help'], { help: true }],
]

/** argv -> its one-line error; `HINT` stands for the face's help command. */
const bad: Array<[string[], string]> = [
  [['--model'], "Option '--model <value>' argument missing (see: HINT)"],
  [['--model', '-x'], "Option '--model' argument is ambiguous. (see: HINT)"],
  [['--permission-mode'], "Option '--permission-mode <value>' argument missing (see: HINT)"],
  [['--continue=yes'], "Option '-c, --continue' does not take an argument (see: HINT)"],
  [['--help=x'], "Option '-h, --help' does not take an argument (see: HINT)"],
  [['-cx'], "Unknown option '-x' (see: HINT)"],
  [['-r', 'abc', '-c'], '--resume and --continue cannot be combined'],
  [['--resume=', '-c'], '--resume and --continue cannot be combined'],
  [['-c', '-r'], '--resume and --continue cannot be combined'],
]

describe.each(faces)('%s', (_face, parse, hint) => {
  it.each(good)('%j parses', (argv, expected) => {
    expect(parse(argv)).toMatchObject(expected)
  })

  it.each(bad)('%j is one line', (argv, message) => {
    let error: unknown
    try {
      parse(argv)
    } catch (caught) {
      error = caught
    }
    expect(error).toBeInstanceOf(KitUsageError)
    expect((error as Error).message).toBe(message.replace('HINT', hint))
  })
})

it('the table covers every shared flag, and both faces raise the one UsageError class', () => {
  const named = new Set([...good, ...bad].flatMap(([argv]) => argv.filter((a) => a.startsWith('--'))))
  for (const flag of Object.keys(SHARED_FLAGS))
    expect([...named].some((a) => a === `--${flag}` || a.startsWith(`--${flag}=`))).toBe(true)
  expect(UsageError).toBe(KitUsageError)
  expect(HeadlessUsageError).toBe(KitUsageError)
})
