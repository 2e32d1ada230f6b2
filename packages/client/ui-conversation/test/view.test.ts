// The chat view and composer rendered with the real React server renderer over
// snapshots folded from recorded frames. (Interaction is tested in Chromium: test/browser.)
import { readFileSync } from 'node:fs'
import { createElement as h } from 'react'
import { renderToStaticMarkup } from 'react-dom/server'
import { describe, expect, it } from 'vitest'
import type { SessionStreamEvent } from '@dsh/web-protocol'
import { foldConversation, type ConversationNode, type ToolNode } from '@dsh/conversation-model'
import { ChatView, textBlocks, turnClosers, turnOpeners, WINDOW } from '../src/client/chat-view.tsx'
import { en, translator, zh } from '../src/client/strings.ts'
import { ContextSection, PlanSection } from '../src/client/panel.tsx'

const load = (name: string): SessionStreamEvent[] =>
  JSON.parse(readFileSync(new URL(`../../conversation-model/test/fixtures/${name}.json`, import.meta.url), 'utf8'))
const t = translator(en)
const tool = (node: ToolNode) => h('div', { className: 'card' }, `${node.name}:${node.status}`)

describe('ChatView', () => {
  it('mounts only the newest WINDOW nodes of a long history, with a control for the earlier ones', () => {
    const events = Array.from({ length: 150 }, (_, i) => ({
      seq: i,
      time: i,
      type: 'user/message',
      data: { content: [{ type: 'text', text: `prompt ${i}` }], source: { kind: 'human' } },
    }))
    const snapshot = foldConversation(events as never)
    expect(snapshot.nodes).toHaveLength(150)
    const html = renderToStaticMarkup(h(ChatView, { snapshot, t, renderTool: tool }))
    expect(html.match(/data-node="user"/g)).toHaveLength(WINDOW)
    expect(html).toContain('prompt 149')
    expect(html).not.toContain('prompt 89<')
    expect(html).toContain(`data-earlier="${150 - WINDOW}"`)
    expect(html).toContain(`Show earlier messages (${150 - WINDOW})`)
    // A short conversation has no such control.
    const short = renderToStaticMarkup(
      h(ChatView, { snapshot: foldConversation(events.slice(0, 5) as never), t, renderTool: tool }),
    )
    expect(short).not.toContain('data-earlier')
    expect(short.match(/data-node="user"/g)).toHaveLength(5)
  })

  it('renders a recorded tool turn: user text, thinking row, tool slots, the final Markdown answer', () => {
    const snapshot = foldConversation(load('tools-turn'))
    const html = renderToStaticMarkup(h(ChatView, { snapshot, t, renderTool: tool }))
    expect(html).toContain('tidy the notes')
    expect(html).toMatch(/<details class="dsh-thinking" data-node="thinking"><summary>Thought<\/summary>/)
    expect(html).toContain('bash:done')
    expect(html).toContain('edit:done')
    expect(html).toContain('read:error')
    expect(html).toContain('<td>notes.txt</td>')
    expect(html).not.toContain('Working')
    // The sandbox note is collapsed context, not a user bubble.
    expect(html).toMatch(
      /<details class="dsh-context" data-node="context"><summary>Context from sandbox policy<\/summary>/,
    )
  })

  it('marks a cancelled turn and its interrupted text; shows queued prompts; speaks Chinese', () => {
    const snapshot = foldConversation(load('cancelled-turn'))
    const html = renderToStaticMarkup(h(ChatView, { snapshot, t, renderTool: tool }))
    expect(html).toContain('Stopped before the answer finished')
    expect(html).toContain('data-reason="cancelled"')
    expect(html).toContain('Cancelled')
    const zhHtml = renderToStaticMarkup(h(ChatView, { snapshot, t: translator(zh), renderTool: tool }))
    expect(zhHtml).toContain('已取消')
    expect(zhHtml).toContain('回答未完成即已停止')
  })

  it('shows a streaming answer with a caret and a working row while a tool runs', () => {
    const frames = load('tools-turn')
    const firstText = frames.findIndex(
      (f) =>
        f.event === 'message' && f.data.type === 'assistant/chunk' && (f.data.data as any).chunk.kind === 'text-delta',
    )
    const thinking = renderToStaticMarkup(
      h(ChatView, { snapshot: foldConversation(frames.slice(0, firstText)), t, renderTool: tool }),
    )
    expect(thinking).toMatch(
      /<summary><span class="dsh-pulse" aria-hidden="true"><\/span>Thinking…<span class="dsh-thinking-preview" aria-hidden="true">The user wants the notes tidied. First look at the file.<\/span><\/summary>/,
    )
    const streaming = renderToStaticMarkup(
      h(ChatView, { snapshot: foldConversation(frames.slice(0, firstText + 1)), t, renderTool: tool }),
    )
    expect(streaming).toContain('data-streaming="true"')
    expect(streaming).toContain('dsh-caret')
    const call = frames.findIndex((f) => f.event === 'message' && f.data.type === 'tool/call')
    const running = renderToStaticMarkup(
      h(ChatView, { snapshot: foldConversation(frames.slice(0, call + 1)), t, renderTool: tool }),
    )
    expect(running).toContain('bash:running')
  })

  it('lists prompts queued behind the running turn', () => {
    const frames = load('queued-turns')
    const upToFirst = frames.slice(
      0,
      frames.findIndex((f) => f.event === 'message' && f.data.type === 'assistant/chunk'),
    )
    const snapshot = foldConversation(upToFirst)
    const html = renderToStaticMarkup(
      h(ChatView, {
        snapshot: { ...snapshot, queued: [{ id: 'q0', text: 'second question', mode: 'queue' }] },
        t,
        renderTool: tool,
      }),
    )
    expect(html).toMatch(/data-node="queued".*Queued.*second question/s)
    expect(html).toContain('Working…')
  })
})

describe('side panel sections', () => {
  it('show the latest plan and the context figures, and nothing for a fresh session', () => {
    const snapshot = foldConversation(load('tools-turn'))
    const plan = renderToStaticMarkup(h(PlanSection, { snapshot, t }))
    expect(plan).toMatch(
      /data-status="completed".*Read notes.*data-status="in_progress".*Fix beta.*data-status="pending".*Report/s,
    )
    const context = renderToStaticMarkup(h(ContextSection, { snapshot, t }))
    expect(context).toContain(`data-tokens="${snapshot.lastInputTokens}"`)
    expect(context).toContain('Model: deepseek-official/')
    const empty = foldConversation([])
    expect(renderToStaticMarkup(h(PlanSection, { snapshot: empty, t }))).toBe('')
    expect(renderToStaticMarkup(h(ContextSection, { snapshot: empty, t }))).toBe('')
  })
})

describe('dictionaries', () => {
  it('Chinese covers every English key', () => {
    expect(Object.keys(zh).sort()).toEqual(Object.keys(en).sort())
    for (const value of Object.values(zh)) expect(value.trim()).not.toBe('')
  })
})

describe('textBlocks (the opened reasoning body)', () => {
  const line = (i: number) => `reasoning line ${i} ${'x'.repeat(i % 7)}\n`
  const text = Array.from({ length: 400 }, (_, i) => line(i)).join('') + 'and the unfinished tail'

  it('cuts after a newline once a block holds `size` characters; the blocks join to the text', () => {
    const blocks = textBlocks(text, [], 256)
    expect(blocks.join('')).toBe(text)
    expect(blocks.length).toBeGreaterThan(10)
    for (const block of blocks.slice(0, -1)) {
      expect(block.length).toBeGreaterThanOrEqual(256)
      expect(block.endsWith('\n')).toBe(true)
      // The cut is at the first newline from `size` on, not later.
      expect(block.slice(0, -1).indexOf('\n', 255)).toBe(-1)
    }
    expect(textBlocks('short', [], 256)).toEqual(['short'])
    expect(textBlocks('', [], 256)).toEqual([])
  })

  it('as the text grows, the earlier blocks are kept and only the rest is cut again', () => {
    const first = textBlocks(text.slice(0, 5000), [], 256)
    const grown = textBlocks(text, first, 256)
    expect(grown).toEqual(textBlocks(text, [], 256))
    expect(grown.slice(0, first.length - 1)).toEqual(first.slice(0, -1))
  })

  it('does not trust blocks of a text this one does not extend', () => {
    const stale = textBlocks(text, [], 256)
    const other = text.replace('reasoning line 3 ', 'REPLACED line 3 ')
    expect(textBlocks(other, stale, 256).join('')).toBe(other)
    expect(textBlocks(other, stale, 256)).toEqual(textBlocks(other, [], 256))
    expect(textBlocks('fresh start\n', stale, 256)).toEqual(['fresh start\n'])
  })
})

describe('message action points', () => {
  const user = (key: string, turn: number): ConversationNode => ({
    kind: 'user',
    key,
    seq: 0,
    turn,
    text: key,
    images: [],
    time: 0,
  })
  const answer = (key: string, turn: number, streaming = false): ConversationNode => ({
    kind: 'assistant',
    key,
    turn,
    step: 0,
    text: key,
    streaming,
    interrupted: false,
  })

  it('resends only a message that opened its turn (not one steered into it)', () => {
    const nodes = [user('u0', 0), answer('a0', 0), user('u1', 1), user('steer', 1), answer('a1', 1)]
    expect([...turnOpeners(nodes)]).toEqual(['u0', 'u1'])
  })

  it('forks after the answer that closed a turn: before the next turn, or the whole log at the end', () => {
    const nodes = [user('u0', 0), answer('early', 0), answer('a0', 0), user('u1', 1), answer('a1', 1)]
    expect([...turnClosers(nodes, false)]).toEqual([
      ['a0', 1],
      ['a1', undefined],
    ])
    // The newest turn still running: its answer is not a fork point yet.
    expect([...turnClosers([...nodes.slice(0, 4), answer('live', 1, true)], true)]).toEqual([['a0', 1]])
  })
})
