import { describe, expect, it } from 'vitest'
import type { SessionRow, WireEvent } from '@dsh/web-protocol'
import { foldItems, lastPromptTokens } from '../src/fold.ts'
import { cleanTitle, groupSessions, relativeTime, titleOf } from '../src/sessions.ts'
import { shellMessages } from '../src/messages.ts'

const row = (id: string, cwd: string, extra: Partial<SessionRow> = {}): SessionRow => ({
  sessionId: id,
  cwd,
  createdAt: 0,
  updatedAt: 0,
  turns: 0,
  events: 0,
  archived: false,
  status: 'idle',
  queued: 0,
  ...extra,
})
let seq = 0
const ev = (type: string, data: unknown): WireEvent => ({ seq: seq++, type, time: 0, data })

describe('sidebar grouping', () => {
  it('puts workspaces first in their order, then other folders, and filters by title or first prompt', () => {
    const sessions = [
      row('a', '/x/other', { title: 'Fix the build' }),
      row('b', '/w/one', { firstPrompt: 'add a test\nsecond line' }),
      row('c', '/w/two'),
    ]
    const workspaces = [
      { id: 'w2', name: 'Two', path: '/w/two' },
      { id: 'w1', name: 'One', path: '/w/one' },
      { id: 'w3', name: 'Empty', path: '/w/empty' },
    ]
    expect(groupSessions(sessions, workspaces, '').map((g) => [g.name, g.rows.map((r) => r.sessionId)])).toEqual([
      ['Two', ['c']],
      ['One', ['b']],
      ['Empty', []],
      ['other', ['a']],
    ])
    expect(groupSessions(sessions, workspaces, 'ADD A').map((g) => [g.name, g.rows.map((r) => r.sessionId)])).toEqual([
      ['One', ['b']],
    ])
    expect(groupSessions(sessions, workspaces, 'nothing like it')).toEqual([])
    expect(titleOf(sessions[1])).toBe('add a test')
    expect(titleOf(sessions[2])).toBeUndefined()
  })
})

describe('sidebar titles and times', () => {
  it('shows the words of a prompt, never its directives', () => {
    expect(cleanTitle('/goal ship the release notes')).toBe('ship the release notes')
    expect(cleanTitle('<system-reminder>plan mode is on</system-reminder>\nrefactor the parser')).toBe(
      'refactor the parser',
    )
    expect(cleanTitle('<command-name>/review</command-name> <command-args></command-args>\nlook at PR 4')).toBe(
      'look at PR 4',
    )
    expect(cleanTitle('compare @session:s_123 with @src/lib/parse.ts please')).toBe('compare with parse.ts please')
    expect(cleanTitle('  \n/plan\n  second line here')).toBe('second line here')
    expect(cleanTitle('x'.repeat(100))).toBe(`${'x'.repeat(79)}…`)
    expect(titleOf(row('d', '/w', { firstPrompt: '/goal <b>bold</b> fix it' }))).toBe('fix it')
    // A title set by the user or the host wins over the prompt.
    expect(titleOf(row('e', '/w', { title: 'Release', firstPrompt: '/goal other' }))).toBe('Release')
  })

  it('gives relative times in the page language', () => {
    const now = Date.UTC(2026, 0, 10, 12)
    expect(relativeTime(now - 10_000, now, 'en')).toBe('just now')
    expect(relativeTime(now - 5 * 60_000, now, 'en')).toBe('5 min. ago')
    expect(relativeTime(now - 3 * 3_600_000, now, 'en')).toBe('3 hr. ago')
    expect(relativeTime(now - 24 * 3_600_000, now, 'en')).toBe('yesterday')
    expect(relativeTime(now - 10_000, now, 'zh')).toBe('刚刚')
    expect(relativeTime(now - 3 * 3_600_000, now, 'zh')).toBe('3小时前')
  })
})

describe('fallback fold', () => {
  it('joins streamed text into one item, takes the final message, keeps tool calls and turn errors, skips non-human input', () => {
    const events = [
      ev('user/message', { content: [{ type: 'text', text: 'hello' }], source: { kind: 'human' } }),
      ev('user/message', { content: [{ type: 'text', text: 'context' }], source: { kind: 'plugin', plugin: 'x' } }),
      ev('assistant/chunk', { chunk: { kind: 'text-delta', text: 'Hel' } }),
      ev('assistant/chunk', { chunk: { kind: 'reasoning-delta', text: 'hmm' } }),
      ev('assistant/chunk', { chunk: { kind: 'text-delta', text: 'lo!' } }),
    ]
    const mid = foldItems(events, events.length)
    expect(mid.map((i) => [i.kind, i.text, i.streaming ?? false])).toEqual([
      ['user', 'hello', false],
      ['assistant', 'Hello!', true],
    ])
    events.push(
      ev('assistant/message', {
        message: { role: 'assistant', content: [{ type: 'text', text: 'Hello!' }] },
        usage: { input: 100, output: 5, cacheRead: 900, cacheWrite: 0, reasoning: 0 },
      }),
      ev('tool/call', { callId: 'c1', name: 'bash', arguments: '{"command":"ls"}' }),
      ev('turn/end', { turn: 0, reason: 'error', error: { code: 'MISSING_CREDENTIAL', message: 'no key' } }),
    )
    expect(foldItems(events, events.length).map((i) => [i.kind, i.text, i.streaming ?? false])).toEqual([
      ['user', 'hello', false],
      ['assistant', 'Hello!', false],
      ['tool', '{"command":"ls"}', false],
      ['error', 'no key', false],
    ])
    expect(lastPromptTokens(events)).toBe(1000)
    expect(lastPromptTokens(events.slice(0, 3))).toBeUndefined()
  })
})

describe('shell dictionaries', () => {
  it('translate every English message into Chinese, with the same placeholders', () => {
    const en = shellMessages.en
    const zh = shellMessages.zh!
    expect(Object.keys(zh).sort()).toEqual(Object.keys(en).sort())
    const holes = (text: string) => (text.match(/\{\w+\}/g) ?? []).sort()
    for (const key of Object.keys(en)) expect(holes(zh[key]), key).toEqual(holes(en[key]))
  })
})
