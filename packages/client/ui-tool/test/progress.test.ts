// A running call's progress on its card: `tool/progress` frames (what @dsh/mcp-client appends for
// an MCP server's notifications/progress) folded by the real conversation model and rendered by
// the real card with React's server renderer: a bar and "3/10 message" while it runs, nothing once
// the result is in.
import { createElement as h } from 'react'
import { renderToStaticMarkup } from 'react-dom/server'
import { describe, expect, it } from 'vitest'
import type { SessionStreamEvent } from '@dsh/web-protocol'
import { foldConversation, type ToolNode } from '@dsh/conversation-model'
import { GenericCard, BashCard } from '../src/client/cards.tsx'
import { progressView } from '../src/present.ts'
import { en, translator } from '../src/client/strings.ts'

const t = translator(en)
let seq = 0
const frame = (type: string, data: unknown): SessionStreamEvent =>
  ({ event: 'message', id: seq, data: { type, seq: seq++, time: 1000 + seq, data } }) as SessionStreamEvent
const callId = 'call_1'
const start = [
  frame('turn/start', { turn: 0 }),
  frame('step/start', { turn: 0, step: 0 }),
  frame('user/message', { content: [{ type: 'text', text: 'go' }], source: { kind: 'human' } }),
  frame('assistant/message', {
    message: { role: 'assistant', content: [{ type: 'tool-call', callId, name: 'mcp__x__slow', arguments: '{}' }] },
  }),
  frame('tool/call', { callId, name: 'mcp__x__slow', arguments: '{}' }),
  frame('tool/progress', { callId, progress: 1, total: 10, message: 'step 1 of 10', source: 'mcp:x' }),
  frame('tool/progress', { callId, progress: 3, total: 10, message: 'step 3 of 10', source: 'mcp:x' }),
]
const tool = (frames: SessionStreamEvent[]) =>
  foldConversation(frames).nodes.find((n): n is ToolNode => n.kind === 'tool')!

describe('tool progress on the card', () => {
  it('folds the latest progress of a running call and draws a bar with "3/10 message"', () => {
    const node = tool(start)
    expect(node.status).toBe('running')
    expect(node.progress).toEqual({ progress: 3, total: 10, message: 'step 3 of 10' })
    expect(progressView(node)).toEqual({ count: '3/10', fraction: 0.3, message: 'step 3 of 10' })
    const html = renderToStaticMarkup(h(GenericCard, { node, t }))
    expect(html).toContain('data-progress="3/10"')
    expect(html).toContain('<progress class="dsh-tool-progress-bar" max="1" value="0.3" aria-label="Progress">')
    expect(html).toContain('step 3 of 10')
    // Every card shares the frame that draws it.
    expect(renderToStaticMarkup(h(BashCard, { node: { ...node, name: 'bash' }, t }))).toContain('data-progress="3/10"')
  })

  it('without a total: the count and message, no bar; after the result: no progress', () => {
    const untotalled = [...start, frame('tool/progress', { callId, progress: 4, source: 'mcp:x' })]
    const open = tool(untotalled)
    expect(progressView(open)).toEqual({ count: '4' })
    expect(renderToStaticMarkup(h(GenericCard, { node: open, t }))).not.toContain('<progress')
    const done = tool([
      ...untotalled,
      frame('tool/result', {
        message: { role: 'tool', callId, name: 'mcp__x__slow', content: [{ type: 'text', text: 'ok' }] },
      }),
    ])
    expect(done.status).toBe('done')
    expect(progressView(done)).toBeUndefined()
    expect(renderToStaticMarkup(h(GenericCard, { node: done, t }))).not.toContain('dsh-tool-progress')
  })
})
