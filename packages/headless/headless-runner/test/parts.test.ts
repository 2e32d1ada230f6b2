// The runner's pure parts: the command line, the task from stdin, the session table and the
// unreachable-endpoint test. The whole run is covered end to end in @dsh/bundle-headless's tests.
import { describe, expect, it } from 'vitest'
import {
  UsageError,
  completeTask,
  formatAge,
  isUnreachable,
  parseHeadlessArgs,
  sessionTable,
  toolTitle,
} from '@dsh/headless-runner'

describe('parseHeadlessArgs', () => {
  it('reads the task and the options, in any order', () => {
    const options = parseHeadlessArgs(['fix', '--model', 'p/m', 'the', 'bug', '--max-steps', '3', '-c'])
    expect(options).toMatchObject({ task: 'fix the bug', model: 'p/m', maxSteps: 3, continue: true, resumePick: false })
  })

  it('takes -r bare as "pick one" and -r ID as the id', () => {
    expect(parseHeadlessArgs(['-r'])).toMatchObject({ resumePick: true, resume: undefined })
    expect(parseHeadlessArgs(['-r', 'abc', 'task'])).toMatchObject({ resumePick: false, resume: 'abc', task: 'task' })
  })

  it.each([
    [['--output-format', 'xml', 't'], "--output-format must be text, json or stream-json, not 'xml'"],
    [['--max-steps', '0', 't'], "--max-steps must be a positive integer, not '0'"],
    [['-r', 'x', '-c', 't'], '--resume and --continue cannot be combined'],
    [['--all', 't'], '--all only applies to "dsh sessions"'],
    [['--list-sessions', 't'], 'dsh sessions takes no task'],
    [['--nope', 't'], "Unknown option '--nope' (see: dsh -p --help)"],
  ])('refuses %j with one line', (argv, message) => {
    expect(() => parseHeadlessArgs(argv)).toThrow(new UsageError(message))
  })
})

describe('completeTask', () => {
  it('reads the task from stdin when none is given, appends piped context to a given one', async () => {
    expect(await completeTask('', async (untilEnd) => (untilEnd ? 'from stdin' : undefined))).toBe('from stdin')
    expect(await completeTask('task', async () => 'context\n\n')).toBe('task\n\ncontext')
    await expect(completeTask('', async () => '  ')).rejects.toThrow(UsageError)
  })
})

describe('sessions and observers', () => {
  it('formats ages and an aligned table', () => {
    const now = 10_000_000
    expect(formatAge(now - 5 * 60_000, now)).toBe('5m ago')
    const table = sessionTable(
      [{ id: 'a1', cwd: '/w', createdAt: now - 1000, turns: 12, title: 'first\nline' }],
      false,
      now,
    )
    expect(table).toBe('ID  UPDATED   TURNS  TITLE\na1  just now     12  first line\n')
  })

  it('tells an unreachable endpoint from other transport errors', () => {
    const refused = { code: 'TRANSPORT', message: 'fetch failed', cause: { code: 'ECONNREFUSED' } }
    expect(isUnreachable(refused)).toBe(true)
    expect(isUnreachable({ code: 'TRANSPORT', message: 'socket hang up' })).toBe(false)
    expect(isUnreachable({ code: 'AUTH', message: 'ECONNREFUSED' })).toBe(false)
    expect(toolTitle('bash', '{"command":"ls  -la"}')).toBe('bash: ls -la')
  })
})
