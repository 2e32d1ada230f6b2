// Tool presentation over a recorded turn of the real dsh web (bash with exit 3, an edit with its
// diff, read/grep/glob, todo_write, a failed read) and the cards rendered by React's server renderer.
import { readFileSync } from 'node:fs'
import { createElement as h } from 'react'
import { renderToStaticMarkup } from 'react-dom/server'
import { describe, expect, it } from 'vitest'
import type { SessionStreamEvent } from '@dsh/web-protocol'
import { foldConversation, type ToolNode } from '@dsh/conversation-model'
import {
  additionDiff,
  bashView,
  fileChangeView,
  formatDuration,
  parseUnifiedDiff,
  summaryView,
  todoView,
} from '../src/present.ts'
import { BashCard, DiffCard, GenericCard, SummaryCard, TodoCard, cardFor } from '../src/client/cards.tsx'
import { LongText } from '../src/client/long-text.tsx'
import { en, translator, zh } from '../src/client/strings.ts'

const frames: SessionStreamEvent[] = JSON.parse(
  readFileSync(new URL('../../conversation-model/test/fixtures/tools-turn.json', import.meta.url), 'utf8'),
)
const tools = foldConversation(frames).nodes.filter((n): n is ToolNode => n.kind === 'tool')
const byName = (name: string, nth = 0) => tools.filter((n) => n.name === name)[nth]
const t = translator(en)
const render = (card: any, node: ToolNode) => renderToStaticMarkup(h(card, { node, t }))

describe('presentation data', () => {
  it('bash: command, output without the status line, exit code and duration from meta', () => {
    const view = bashView(byName('bash'))
    expect(view).toMatchObject({
      command: 'cat notes.txt; echo done >&2; exit 3',
      description: 'Show the notes',
      exitCode: 3,
      status: 'exited',
      truncated: false,
    })
    expect(view.output).toBe('alpha\nbeta\ngamma\ndone')
    expect(view.durationMs).toBeGreaterThanOrEqual(0)
    expect(formatDuration(340)).toBe('340 ms')
    expect(formatDuration(1234)).toBe('1.2 s')
    expect(formatDuration(125_000)).toBe('2 min 5 s')
    expect(formatDuration(undefined)).toBeUndefined()
  })

  it('edit: the unified diff in meta.diff as typed, numbered lines', () => {
    const view = fileChangeView(byName('edit'))
    expect(view.path).toBe('notes.txt')
    expect(view.absolutePath).toBe('/tmp/REC/project/notes.txt')
    expect(view.diff).toMatchObject({ added: 1, removed: 1, oldPath: 'notes.txt', newPath: 'notes.txt' })
    expect(view.diff!.lines).toEqual([
      { type: 'hunk', text: '@@ -1,3 +1,3 @@' },
      { type: 'ctx', text: 'alpha', oldNo: 1, newNo: 1 },
      { type: 'del', text: 'beta', oldNo: 2 },
      { type: 'add', text: 'BETA', newNo: 2 },
      { type: 'ctx', text: 'gamma', oldNo: 3, newNo: 3 },
    ])
    expect(parseUnifiedDiff('').lines).toEqual([])
    expect(additionDiff('a\nb\n')).toMatchObject({ added: 2, removed: 0 })
  })

  it('read/grep/glob: one-line summaries from arguments and meta; todo_write: its items', () => {
    expect(summaryView(byName('read'))).toEqual({
      subject: 'notes.txt',
      countsKey: 'read.lines',
      counts: { first: 1, last: 3, total: 3 },
    })
    expect(summaryView(byName('grep'))).toEqual({
      subject: 'BETA',
      countsKey: 'grep.matches',
      counts: { total: 1, files: 1 },
    })
    expect(summaryView(byName('glob'))).toEqual({ subject: '*.txt', countsKey: 'glob.files', counts: { total: 1 } })
    expect(summaryView(byName('read', 1))).toEqual({ subject: 'missing.txt' })
    expect(todoView(byName('todo_write')).items.map((i) => i.status)).toEqual(['completed', 'in_progress', 'pending'])
  })
})

describe('cards', () => {
  it('bash card: terminal output, a failing exit code badge, the duration', () => {
    const html = render(BashCard, byName('bash'))
    expect(html).toContain('data-exit-code="3"')
    expect(html).toContain('dsh-badge-bad')
    expect(html).toContain('exit 3')
    expect(html).toMatch(/data-duration-ms="\d+"/)
    expect(html).toContain('$ </span>cat notes.txt; echo done &gt;&amp;2; exit 3')
    expect(html).toContain('<div class="dsh-line">gamma</div>')
  })

  it('edit card: the diff with +1 −1', () => {
    const html = render(DiffCard, byName('edit'))
    expect(html).toContain('+1')
    expect(html).toContain('−1')
    expect(html).toContain('data-diff="del"')
    expect(html).toMatch(/data-diff="add">.*BETA/)
  })

  it('summary cards stay one line unless they failed; the failure is in plain words', () => {
    const read = render(SummaryCard, byName('read'))
    expect(read).toContain('lines 1–3 of 3')
    expect(read).not.toContain('dsh-tool-body')
    const failed = render(SummaryCard, byName('read', 1))
    expect(failed).toContain('/tmp/REC/project/missing.txt does not exist')
    expect(failed).toContain('code NOT_FOUND')
    expect(failed).toContain('Failed')
  })

  it('todo card: a checklist', () => {
    const html = render(TodoCard, byName('todo_write'))
    expect(html).toMatch(
      /data-status="completed".*Read notes.*data-status="in_progress".*Fix beta.*data-status="pending".*Report/s,
    )
  })

  it('unknown tools get the generic card with arguments and output', () => {
    expect(cardFor('mystery')).toBe(GenericCard)
    expect(cardFor('bash')).toBe(BashCard)
    const node: ToolNode = {
      kind: 'tool',
      key: 'tool:x',
      turn: 0,
      step: 0,
      callId: 'x',
      name: 'mystery',
      arguments: '{"a":1',
      status: 'done',
      result: { text: 'ok', images: [], isError: false },
    }
    // A success starts collapsed (one line); a failure opens with its arguments and error.
    const ok = renderToStaticMarkup(h(GenericCard, { node, t }))
    expect(ok).toContain('aria-expanded="false"')
    expect(ok).not.toContain('dsh-tool-body')
    const failed = renderToStaticMarkup(
      h(GenericCard, {
        node: {
          ...node,
          status: 'error',
          result: {
            text: 'bad',
            images: [],
            isError: true,
            error: { code: 'INVALID_ARGUMENTS', message: 'arguments are not JSON' },
          },
        },
        t,
      }),
    )
    expect(failed).toContain('The model sent arguments that are not valid JSON')
    expect(failed).toContain('arguments are not JSON')
  })

  it('a long output is cut visibly, never silently', () => {
    const text = Array.from({ length: 100 }, (_, i) => `line ${i}`).join('\n')
    const html = renderToStaticMarkup(h(LongText, { text, t }))
    expect(html).toContain('Showing 40 of 100 lines')
    expect(html).toContain('Show all 100 lines')
    expect(html).toContain('line 39')
    expect(html).not.toContain('line 40<')
    const short = renderToStaticMarkup(h(LongText, { text: 'a\nb', t }))
    expect(short).not.toContain('Show all')
  })

  it('an expanded output of 100,000 lines renders only a window of rows', () => {
    const text = Array.from({ length: 100_000 }, (_, i) => `row ${i}`).join('\n')
    const html = renderToStaticMarkup(h(LongText, { text, t, initiallyExpanded: true }))
    expect(html).toContain('data-virtual="true"')
    expect(html).toContain('data-lines="100000"')
    expect(html).toContain(`height:${100_000 * 18}px`)
    expect(html.match(/class="dsh-line"/g)!.length).toBeLessThan(100)
    expect(html).toContain('row 0<')
    expect(html).not.toContain('row 500<')
    expect(html).toContain('Show less')
  })

  it('Chinese covers every English key', () => {
    expect(Object.keys(zh).sort()).toEqual(Object.keys(en).sort())
  })
})
