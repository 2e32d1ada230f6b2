// The TUI's components on their own: the streaming block splitter, tool cards, panels answered
// by keys, the status line, the git branch and NO_COLOR.
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { visibleWidth } from '@mariozechner/pi-tui'
import type { ApprovalAnswer, ApprovalId, ApprovalRequest } from '@dsh/user-approval'
import type { QuestionAnswer } from '@dsh/user-questions'
import { ApprovalPanel, ConfirmPanel, Picker, QuestionPanel } from '../src/panels.ts'
import { gitBranch, statusText } from '../src/status.ts'
import { markdownTheme, palette } from '../src/theme.ts'
import { highlightCode } from '../src/highlight.ts'
import { ToolCard, sanitize, toolSubject } from '../src/tool-card.ts'
import { AssistantEntry, firstBlockBoundary } from '../src/transcript.ts'

const color = palette({})
const plain = palette({ NO_COLOR: '1' })
const ESC = '\x1b'

describe('streaming blocks', () => {
  it('finds the first blank line outside a code fence with text after it', () => {
    expect(firstBlockBoundary('one paragraph')).toBe(-1)
    expect(firstBlockBoundary('a\n\n')).toBe(-1)
    expect(firstBlockBoundary('a\n\nb')).toBe(3)
    expect(firstBlockBoundary('a\n\nb\n\nc')).toBe(3)
    // Inside a fence blank lines do not end a block.
    expect(firstBlockBoundary('```\nx\n\ny')).toBe(-1)
    expect(firstBlockBoundary('```\nx\n\ny\n```\n\nafter')).toBe(14)
  })

  it('renders a reply streamed in pieces exactly as the same reply set at once', () => {
    const text =
      '# Title\n\nFirst paragraph with **bold**.\n\n```js\nconst a = 1\n\nconst b = 2\n```\n\n- one\n- two\n\nLast words 你好.'
    const streamed = new AssistantEntry(color, markdownTheme(color))
    for (let i = 0; i < text.length; i += 3) streamed.appendText(text.slice(i, i + 3))
    const whole = new AssistantEntry(color, markdownTheme(color))
    whole.setText(text)
    expect(streamed.render(60)).toEqual(whole.render(60))
    for (const line of streamed.render(30)) expect(visibleWidth(line)).toBeLessThanOrEqual(30)
  })

  it('keeps the lines of finished blocks identical while the tail grows', () => {
    const entry = new AssistantEntry(color, markdownTheme(color))
    entry.appendText('Finished block one.\n\nGrowing')
    const before = entry.render(40)
    entry.appendText(' tail with more words')
    const after = entry.render(40)
    expect(after.slice(0, before.length - 1)).toEqual(before.slice(0, -1))
  })
})

describe('ToolCard', () => {
  it('shows the bash tail, how many lines were hidden, and the exit code', () => {
    const card = new ToolCard('c1', 'bash', JSON.stringify({ command: 'seq 1 20' }), color)
    card.setResult({
      text: `${Array.from({ length: 20 }, (_, i) => i + 1).join('\n')}\n[exit code: 0]`,
      isError: false,
      meta: { exitCode: 0 },
    })
    const text = plainText(card.render(80))
    expect(text[0]).toBe('● bash seq 1 20')
    expect(text.join('\n')).toMatch(/15 lines above/)
    expect(text.join('\n')).toMatch(/\b20\b/)
    expect(text.join('\n')).not.toMatch(/^\s+15$/m)
    expect(text.at(-1)).toMatch(/exit 0/)
    card.setExpanded(true)
    expect(plainText(card.render(80)).join('\n')).toMatch(/⎿ 1$/m)
  })

  it('shows a failing exit code in red and an edit as a coloured diff', () => {
    const bash = new ToolCard('c2', 'bash', '{"command":"false"}', color)
    bash.setResult({ text: '(no output)\n[exit code: 1]', isError: false, meta: { exitCode: 1 } })
    expect(bash.render(80).at(-1)).toContain(`${ESC}[31mexit 1`)
    const edit = new ToolCard('c3', 'edit', '{"file_path":"a.txt"}', color)
    edit.setResult({
      text: 'Edited',
      isError: false,
      meta: { diff: '--- a/a.txt\n+++ b/a.txt\n@@ -1,2 +1,2 @@\n alpha\n-beta\n+gamma\n' },
    })
    const lines = edit.render(80)
    expect(plainText(lines)).toContain('  ⎿ 1 line added, 1 line removed')
    expect(lines.some((l) => l.includes(`${ESC}[32m+gamma`))).toBe(true)
    expect(lines.some((l) => l.includes(`${ESC}[31m-beta`))).toBe(true)
    expect(plainText(lines).some((l) => l.includes('+++'))).toBe(false)
  })

  it('summarises reads and searches in one line, and strips escape sequences and tabs from output', () => {
    const read = new ToolCard('c4', 'read', '{"file_path":"notes.txt"}', color)
    read.setResult({ text: 'a\nb\nc\n', isError: false })
    expect(plainText(read.render(80))).toEqual(['● read notes.txt', '  ⎿ read 3 lines'])
    const grep = new ToolCard('c5', 'grep', '{"pattern":"TODO","path":"src"}', color)
    grep.setResult({ text: '', isError: false })
    expect(plainText(grep.render(80))).toEqual(['● grep TODO  in src', '  ⎿ no matches'])
    expect(sanitize(`${ESC}[31mred${ESC}[0m\tx\r\n${ESC}]0;title\x07y`)).toBe('red    x\ny')
    expect(toolSubject('bash', 'not json')).toBe('')
  })
})

describe('ConfirmPanel', () => {
  const answer = (keys: string[]) => {
    const answers: boolean[] = []
    const panel = new ConfirmPanel(
      'Switch to danger-full-access?',
      'No confinement.',
      'y switches · any other key keeps workspace-write',
      plain,
      (yes) => answers.push(yes),
    )
    for (const key of keys) panel.handleInput(key)
    return { answers, panel }
  }

  it('only y (or Y) is yes; the first other key of any kind is no, and only one answer is given', () => {
    expect(answer(['y']).answers).toEqual([true])
    expect(answer(['Y']).answers).toEqual([true])
    for (const key of ['n', ESC, '\r', '\x1b[Z', ' ', '\x03', 'yes'])
      expect(answer([key]).answers, JSON.stringify(key)).toEqual([false])
    expect(answer(['n', 'y']).answers).toEqual([false])
  })

  it('renders the question, the body and the hint within the width', () => {
    const lines = answer([]).panel.render(30)
    for (const line of lines) expect(visibleWidth(line)).toBeLessThanOrEqual(30)
    expect(lines.join('\n')).toMatch(/Switch to danger-full-acces/)
    expect(lines.join('\n')).toContain('No confinement.')
  })
})

describe('ApprovalPanel', () => {
  const request = (
    options: ApprovalRequest['options'] = ['allowed-once', 'allowed-always', 'rejected'],
  ): ApprovalRequest => ({
    id: 'approval-1' as ApprovalId,
    kind: 'command',
    title: 'Run `rm -rf build` outside the sandbox',
    detail: 'Reason given: cleanup',
    action: { command: 'rm -rf build' },
    options,
    time: 0,
  })
  const answerWith = (keys: string[], options?: ApprovalRequest['options']) => {
    const answers: ApprovalAnswer[] = []
    const panel = new ApprovalPanel(request(options), plain, (a) => answers.push(a))
    for (const key of keys) panel.handleInput(key)
    return { answers, panel }
  }

  it('allows nothing on Enter alone; y, a and n answer at once', () => {
    expect(answerWith(['\r']).answers).toEqual([])
    expect(answerWith(['y']).answers).toEqual([{ decision: 'allowed-once' }])
    expect(answerWith(['a']).answers).toEqual([{ decision: 'allowed-always' }])
    expect(answerWith(['n']).answers[0]).toMatchObject({ decision: 'rejected' })
    expect(answerWith([`${ESC}`]).answers[0]).toMatchObject({ decision: 'rejected' })
    // Arrows pick a row, Enter confirms it; only one answer is ever given.
    expect(answerWith(['\x1b[B', '\r', 'y']).answers).toEqual([{ decision: 'allowed-once' }])
  })

  it('never offers a choice the request left out, and r denies with a typed reason', () => {
    const { answers, panel } = answerWith(['a'], ['allowed-once', 'rejected'])
    expect(answers).toEqual([])
    expect(panel.render(80).join('\n')).not.toMatch(/rest of the session/)
    const reasoned = answerWith(['r', 'u', 's', 'e', ' ', 'b', '\r'])
    expect(reasoned.answers).toEqual([{ decision: 'rejected', reason: 'the user denied it', message: 'use b' }])
  })

  it('renders within the width, with the title and the keys', () => {
    const { panel } = answerWith([])
    const lines = panel.render(40)
    for (const line of lines) expect(visibleWidth(line)).toBeLessThanOrEqual(40)
    expect(lines.join('\n')).toMatch(/Allow this action\?/)
    expect(lines.join('\n')).toMatch(/y\) Yes, allow once/)
  })
})

describe('QuestionPanel and Picker', () => {
  it('answers a choice question, then a free-text one; Esc skips the rest', () => {
    const results: Array<Record<string, QuestionAnswer>> = []
    const panel = new QuestionPanel(
      [
        { id: 'db', question: 'Which database?', options: [{ label: 'SQLite' }, { label: 'Postgres' }] },
        { id: 'name', question: 'Project name?' },
      ],
      plain,
      (a) => results.push(a),
    )
    panel.handleInput('\x1b[B')
    panel.handleInput('\r')
    for (const ch of 'demo') panel.handleInput(ch)
    panel.handleInput('\r')
    expect(results).toEqual([{ db: { selected: ['Postgres'] }, name: { selected: [], text: 'demo' } }])
    const skipped: unknown[] = []
    const two = new QuestionPanel(
      [
        { id: 'x', question: 'q?' },
        { id: 'y', question: 'r?' },
      ],
      plain,
      (a) => skipped.push(a),
    )
    for (const ch of 'yes\r') two.handleInput(ch)
    two.handleInput(ESC)
    expect(skipped).toEqual([{ x: { selected: [], text: 'yes' } }])
  })

  it('toggles several picks with Space in a multi-select question', () => {
    const results: Array<Record<string, QuestionAnswer>> = []
    const panel = new QuestionPanel(
      [
        {
          id: 'f',
          question: 'Features?',
          multiSelect: true,
          options: [{ label: 'a' }, { label: 'b' }, { label: 'c' }],
        },
      ],
      plain,
      (a) => results.push(a),
    )
    panel.handleInput(' ')
    panel.handleInput('\x1b[B')
    panel.handleInput('\x1b[B')
    panel.handleInput(' ')
    panel.handleInput('\r')
    expect(results[0]?.f.selected.sort()).toEqual(['a', 'c'])
  })

  it('filters a picker by typing and returns the picked value', () => {
    const picked: Array<string | undefined> = []
    const picker = new Picker(
      'Model',
      [
        { value: 'p/alpha', label: 'p/alpha' },
        { value: 'p/beta', label: 'p/beta' },
      ],
      plain,
      (v) => picked.push(v),
    )
    for (const ch of 'bet') picker.handleInput(ch)
    picker.handleInput('\r')
    expect(picked).toEqual(['p/beta'])
  })
})

describe('code highlighting', () => {
  it('colours keywords, strings, numbers and comments of a known language, and nothing under NO_COLOR', () => {
    const [line] = highlightCode('const x = "hi" + 42 // note', 'ts', color)
    expect(line).toContain(`${ESC}[35mconst${ESC}[39m`)
    expect(line).toContain(`${ESC}[32m"hi"${ESC}[39m`)
    expect(line).toContain(`${ESC}[33m42${ESC}[39m`)
    expect(line).toContain(`${ESC}[90m// note${ESC}[39m`)
    expect(highlightCode('def f():\n\treturn 1 # done', 'python', color)[1]).toMatch(/^ {4}\x1b\[35mreturn/)
    expect(highlightCode('const x = 1', 'ts', plain)).toEqual(['const x = 1'])
    expect(highlightCode('anything', 'unknown-lang', color)).toEqual([`${ESC}[32manything${ESC}[39m`])
  })
})

describe('status line and colour', () => {
  it('names model, effort, mode, context use, tokens, cwd and branch; leaves unknown fields out', () => {
    const parts = statusText(
      {
        model: 'deepseek-official/deepseek-v4-flash',
        effort: 'high',
        mode: 'read-only',
        contextUsed: 50_000,
        contextWindow: 200_000,
        tokensIn: 1234,
        tokensOut: 56,
        cwd: '/srv/x',
        branch: 'main',
      },
      plain,
    )
    expect(parts).toEqual([
      'deepseek-official/deepseek-v4-flash (high)',
      'read-only',
      'ctx 25%',
      '↑1.2k ↓56',
      '/srv/x ⎇ main',
    ])
    expect(statusText({ model: 'm', cwd: '/x' }, plain)).toEqual(['m', '/x'])
  })

  it('reads the git branch from .git/HEAD, including a worktree pointer file', () => {
    const root = mkdtempSync(join(tmpdir(), 'dsh-tui-git-'))
    mkdirSync(join(root, 'repo', '.git'), { recursive: true })
    writeFileSync(join(root, 'repo', '.git', 'HEAD'), 'ref: refs/heads/feature/x\n')
    mkdirSync(join(root, 'repo', 'sub'))
    expect(gitBranch(join(root, 'repo', 'sub'))).toBe('feature/x')
    mkdirSync(join(root, 'wt'))
    mkdirSync(join(root, 'gitdir'))
    writeFileSync(join(root, 'gitdir', 'HEAD'), '0123456789abcdef\n')
    writeFileSync(join(root, 'wt', '.git'), `gitdir: ${join(root, 'gitdir')}\n`)
    expect(gitBranch(join(root, 'wt'))).toBe('01234567')
    expect(gitBranch(mkdtempSync(join(tmpdir(), 'dsh-tui-nogit-')))).toBeUndefined()
  })

  it('writes no colour sequence with NO_COLOR set, and colour without it', () => {
    const card = new ToolCard('c', 'bash', '{"command":"x"}', plain)
    card.setResult({ text: '[exit code: 1]', isError: false, meta: { exitCode: 1 } })
    const entry = new AssistantEntry(plain, markdownTheme(plain))
    entry.setText('# Head\n\n**bold** and `code`\n\n- item')
    const all = [
      ...card.render(80),
      ...entry.render(80),
      ...statusText({ model: 'm', mode: 'x', cwd: '/', branch: 'b' }, plain),
    ].join('\n')
    expect(all).not.toMatch(/\x1b\[(3\d|9\d|4\d)m/)
    expect(palette({ NO_COLOR: '' }).color).toBe(true)
    expect(color.red('x')).toBe(`${ESC}[31mx${ESC}[39m`)
  })
})

function plainText(lines: string[]): string[] {
  // eslint-disable-next-line no-control-regex
  return lines.map((l) => l.replace(/\x1b\[[0-9;]*m/g, '').replace(/\s+$/, ''))
}
