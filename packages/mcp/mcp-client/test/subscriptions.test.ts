// The bookkeeping of resource subscriptions over a recording connection: one subscription per URI
// however many sessions mention it, again after a reconnect, none for a server without the
// capability, an update logged and queued only for live watching sessions (and unsubscribed once
// none is left), and the queued updates read again as one note per URI. A resumed session's log
// names what it watched (and an update the model was not shown); it is watched again once the
// server is connected.
import { describe, expect, it } from 'vitest'
import { Context } from 'cordis'
import { SessionStore } from '@dsh/session'
import { loggedMentions } from '../src/logged-mentions.ts'
import {
  recallOnResume,
  ResourceSubscriptions,
  sessionSubscriptions,
  type SubscribableConnection,
} from '../src/subscriptions.ts'

function connection(subscribable = true) {
  const sent: string[] = []
  let text = 'v1'
  let fail = false
  const client = {
    subscribeResource: async ({ uri }: { uri: string }) => void sent.push(`subscribe ${uri}`),
    unsubscribeResource: async ({ uri }: { uri: string }) => void sent.push(`unsubscribe ${uri}`),
  }
  const c: SubscribableConnection & { sent: string[]; set(t: string): void; failReads(): void } = {
    name: 'docs',
    offersResources: true,
    subscribable,
    sent,
    set: (t) => (text = t),
    failReads: () => (fail = true),
    readResource: async (uri) => {
      if (fail) throw new Error('the MCP server "docs" is not connected (closed)')
      return { contents: [{ uri, mimeType: 'text/plain', text }] }
    },
    request: (_signal, send) => send(client as never, { timeout: 1000 }),
  }
  return c
}

function setup() {
  const live = new Set(['s1', 's2'])
  const logged: Array<[string, unknown]> = []
  const subs = new ResourceSubscriptions({
    live: (id) => live.has(id),
    log: (id, notice) => logged.push([id, notice]),
    warn: () => {},
    maxChars: () => 1000,
  })
  return { live, logged, subs }
}

describe('resource subscriptions', () => {
  it('subscribes once per URI, again after a reconnect, never without the capability', async () => {
    const { subs } = setup()
    const c = connection()
    subs.state(c, 'connected')
    await subs.watch(c, 'file:///a.md', 's1')
    await subs.watch(c, 'file:///a.md', 's2')
    expect(c.sent).toEqual(['subscribe file:///a.md'])
    subs.state(c, 'connected') // a status refresh while connected: nothing new
    subs.state(c, 'retrying')
    subs.state(c, 'connected')
    await new Promise((resolve) => setImmediate(resolve))
    expect(c.sent).toEqual(['subscribe file:///a.md', 'subscribe file:///a.md'])
    const plain = connection(false)
    await subs.watch(plain, 'file:///a.md', 's1')
    subs.updated(plain, 'file:///a.md')
    expect(plain.sent).toEqual([])
    expect(await subs.take('s1')).toEqual([])
  })

  it('logs and queues an update for live watchers only, one note per URI, read again', async () => {
    const { live, logged, subs } = setup()
    const c = connection()
    await subs.watch(c, 'file:///a.md', 's1')
    await subs.watch(c, 'file:///a.md', 's2')
    subs.updated(c, 'file:///other.md')
    live.delete('s2')
    c.set('v2')
    subs.updated(c, 'file:///a.md')
    subs.updated(c, 'file:///a.md')
    expect(logged).toEqual([
      ['s1', { server: 'docs', uri: 'file:///a.md' }],
      ['s1', { server: 'docs', uri: 'file:///a.md' }],
    ])
    const notes = await subs.take('s1')
    expect(notes).toHaveLength(1)
    expect(notes[0].source).toEqual({
      kind: 'plugin',
      plugin: '@dsh/mcp-client',
      label: '@docs:file:///a.md (updated)',
    })
    expect(notes[0].content).toContain('<resource server="docs" uri="file:///a.md">\nv2\n</resource>')
    expect(await subs.take('s1')).toEqual([])
    // A failed read says so in the note.
    c.failReads()
    subs.updated(c, 'file:///a.md')
    expect((await subs.take('s1'))[0].content).toContain(
      'It could not be read again: the MCP server "docs" is not connected',
    )
    // The last watcher gone: the next update unsubscribes.
    live.delete('s1')
    subs.updated(c, 'file:///a.md')
    await new Promise((resolve) => setImmediate(resolve))
    expect(c.sent).toEqual(['subscribe file:///a.md', 'unsubscribe file:///a.md'])
    expect(await subs.take('s1')).toEqual([])
  })

  it('reads what a log mentions: read mentions, updates the model was not shown yet', () => {
    const note = (label: string, text: string, plugin = '@dsh/mcp-client') => ({
      type: 'user/message',
      data: { content: [{ type: 'text', text }], source: { kind: 'plugin', plugin, label } },
    })
    const updated = (server: string, uri: string) => ({ type: 'mcp/resource-updated', data: { server, uri } })
    const events = [
      { type: 'user/message', data: { content: [{ type: 'text', text: 'see @docs:a' }], source: { kind: 'human' } } },
      note('@docs:file:///a.md', '<resource server="docs" uri="file:///a.md">\nv1\n</resource>'),
      note(
        '@docs:file:///gone.md',
        '<resource server="docs" uri="file:///gone.md" unavailable="error">The user mentioned @docs:file:///gone.md, but it could not be read: x</resource>',
      ),
      note('@docs:file:///b.md', 'b', '@dsh/other-plugin'),
      note('@wiki:page:1', '<resource server="wiki" uri="page:1">\np\n</resource>'),
      updated('docs', 'file:///a.md'),
      note('@docs:file:///a.md (updated)', '<resource-updated ...>'),
      updated('wiki', 'page:1'),
      updated('docs', 'file:///never-mentioned.md'),
      note('@nocolon', 'x'),
    ]
    expect(loggedMentions(events)).toEqual([
      { server: 'docs', uri: 'file:///a.md', pending: false },
      { server: 'wiki', uri: 'page:1', pending: true },
    ])
    expect(loggedMentions([])).toEqual([])
  })

  it("watches a resumed session's mentions again: connected now, on connecting, or at its step", async () => {
    const { logged, subs } = setup()
    const c = connection()
    subs.state(c, 'connected')
    subs.resume('s1', [{ server: 'docs', uri: 'file:///a.md', pending: true }], [c])
    await new Promise((resolve) => setImmediate(resolve))
    expect(c.sent).toEqual(['subscribe file:///a.md'])
    // The update logged before the resume is told at the next step, not logged again.
    expect((await subs.take('s1')).map((n) => n.source.label)).toEqual(['@docs:file:///a.md (updated)'])
    expect(logged).toEqual([])
    c.set('v2')
    subs.updated(c, 'file:///a.md')
    expect(logged).toEqual([['s1', { server: 'docs', uri: 'file:///a.md' }]])

    // A server not connected yet: subscribed when it connects.
    const later = { ...connection(), name: 'wiki' }
    subs.resume('s2', [{ server: 'wiki', uri: 'file:///b.md', pending: false }], [later])
    expect(later.sent).toEqual([])
    subs.state(later, 'connected')
    await new Promise((resolve) => setImmediate(resolve))
    expect(later.sent).toEqual(['subscribe file:///b.md'])

    // A scope's own server: matched at the session's step, which waits for the subscription.
    const scoped = { ...connection(), scope: 'agent-1' }
    subs.state(scoped, 'connected')
    subs.resume('s1', [{ server: 'docs', uri: 'file:///c.md', pending: false }], [scoped])
    expect(scoped.sent).toEqual([])
    const limits = { maxMentions: 10, mentionMaxChars: 1000 }
    await subs.expand([], [scoped], 'agent-1', 's1', limits)
    expect(scoped.sent).toEqual(['subscribe file:///c.md'])
    // Done once: a later step does not subscribe again.
    await subs.expand([], [scoped], 'agent-1', 's1', limits)
    expect(scoped.sent).toEqual(['subscribe file:///c.md'])
  })

  it("reads only this package's mention notes, whatever shape the other events have", () => {
    const message = (source: unknown, content: unknown = [{ type: 'text', text: 'x' }]) => ({
      type: 'user/message',
      data: { content, source },
    })
    const plugin = (label?: string) => ({ kind: 'plugin', plugin: '@dsh/mcp-client', ...(label ? { label } : {}) })
    const unavailable =
      '<resource server="docs" uri="u" unavailable="error">The user mentioned @docs:u, but no</resource>'
    const events = [
      {
        type: 'assistant/message',
        data: { content: [{ type: 'text', text: 'x' }], source: plugin('@docs:not-a-note') },
      },
      message(undefined),
      message(plugin()),
      message(plugin('docs:no-at')),
      message({ kind: 'human', plugin: '@dsh/mcp-client', label: '@docs:human' }),
      message(plugin('@:no-server')),
      message(plugin('@docs:')),
      // The note's text may come as a string, after other blocks, or be missing.
      message(plugin('@docs:string'), '<resource server="docs" uri="string">\nok\n</resource>'),
      message(plugin('@docs:gone'), unavailable),
      message(plugin('@docs:after-image'), [{ type: 'image' }, { type: 'text', text: unavailable }]),
      message(plugin('@docs:quoted'), [{ type: 'text', text: `see ${unavailable}` }]),
      message(plugin('@docs:empty'), []),
      message(plugin('@docs:none'), undefined),
      { type: 'mcp/resource-updated', data: { server: 'docs', uri: 'string' } },
      message(plugin('@docs:string'), '<resource server="docs" uri="string">\nok\n</resource>'),
      { type: 'mcp/resource-updated', data: undefined },
    ]
    expect(loggedMentions(events)).toEqual([
      { server: 'docs', uri: 'string', pending: false },
      { server: 'docs', uri: 'quoted', pending: false },
      { server: 'docs', uri: 'empty', pending: false },
      { server: 'docs', uri: 'none', pending: false },
    ])
  })

  it('recalls once per mention, only live sessions, only servers offering resources', async () => {
    const { live, subs } = setup()
    const c = connection()
    subs.resume('s1', [{ server: 'docs', uri: 'file:///a.md', pending: true }], [c])
    subs.resume('gone', [{ server: 'docs', uri: 'file:///gone.md', pending: false }], [c])
    subs.state(c, 'connected')
    await subs
      .expand([], [c], undefined, 's1', { maxMentions: 10, mentionMaxChars: 1000 })
      .then((out) =>
        expect(out.map((n) => ('source' in n ? n.source : undefined))).toEqual([
          { kind: 'plugin', plugin: '@dsh/mcp-client', label: '@docs:file:///a.md (updated)' },
        ]),
      )
    // Told once: connecting again and the next step add nothing.
    subs.state(c, 'retrying')
    subs.state(c, 'connected')
    expect(await subs.expand([], [c], undefined, 's1', { maxMentions: 10, mentionMaxChars: 1000 })).toEqual([])
    await new Promise((resolve) => setImmediate(resolve))
    expect(c.sent).toEqual(['subscribe file:///a.md', 'subscribe file:///a.md'])
    // A session that is no longer in the store watches nothing: its mention is never subscribed.
    expect(live.has('gone')).toBe(false)

    // A server without resources is not asked; one that is not connected yet is matched later.
    const plain = { ...connection(), offersResources: false }
    subs.state(plain, 'connected')
    subs.resume('s2', [{ server: 'docs', uri: 'file:///b.md', pending: true }], [plain])
    expect(await subs.take('s2')).toEqual([])
    expect(plain.sent).toEqual([])
    const limits = { maxMentions: 10, mentionMaxChars: 1000 }
    await subs.expand([], [plain], undefined, 's2', limits)
    const wiki = { ...connection(), name: 'wiki', scope: 'a1' }
    subs.resume(
      's2',
      [
        { server: 'wiki', uri: 'w:1', pending: false },
        { server: 'docs', uri: 'file:///b.md', pending: false },
      ],
      [],
    )
    await subs.expand([], [c], 'a1', 's2', limits)
    expect(c.sent.filter((m) => m.endsWith('b.md'))).toEqual(['subscribe file:///b.md'])
    // wiki was not there at that step: it is still remembered, and subscribed at a step that has it.
    subs.state(wiki, 'connected')
    await subs.expand([], [c, wiki], 'a1', 's2', limits)
    expect(wiki.sent).toEqual(['subscribe w:1'])
  })

  it('recallOnResume: a session entering the store with a log watches its mentions again', async () => {
    const ctx = new Context()
    await ctx.plugin(SessionStore)
    const { subs } = setup()
    const c = connection()
    subs.state(c, 'connected')
    const note = (label: string) => ({
      content: [{ type: 'text' as const, text: `<resource server="docs" uri="${label}">\nv\n</resource>` }],
      source: { kind: 'plugin' as const, plugin: '@dsh/mcp-client', label: `@docs:${label}` },
    })
    const before = ctx.sessions.create({ cwd: '/', id: 's1' })
    before.append('user/message', note('file:///before.md'))
    recallOnResume(ctx, subs, () => [c])
    await new Promise((resolve) => setImmediate(resolve))
    expect(c.sent).toEqual(['subscribe file:///before.md'])
    const log = ctx.sessions.create({ cwd: '/', id: 'log' })
    log.append('user/message', note('file:///after.md'))
    ctx.sessions.create({ cwd: '/', id: 's2', events: log.events })
    await new Promise((resolve) => setImmediate(resolve))
    expect(c.sent).toEqual(['subscribe file:///before.md', 'subscribe file:///after.md'])
  })

  it('expands the mentions of a human message on the server its scope sees, watching the readable ones', async () => {
    const { subs } = setup()
    const global = {
      ...connection(),
      readResource: async (uri: string) => {
        if (uri.includes('missing')) throw new Error('no such resource')
        return { contents: [{ uri, mimeType: 'text/plain', text: `global ${uri}` }] }
      },
    }
    const scoped = { ...connection(), scope: 'a1' }
    const other = { ...connection(), scope: 'a2' }
    const mute = { ...connection(), name: 'mute', offersResources: false }
    const message = {
      content: 'see @docs:file:///a.md and @docs:file:///missing and @mute:x',
      source: { kind: 'human' },
    }
    const limits = { maxMentions: 10, mentionMaxChars: 1000 }
    const plain = await subs.expand([message], [scoped, global, other, mute], undefined, 's1', limits)
    expect(plain.slice(1).map((m) => (typeof m.content === 'string' ? (m.content.split('\n')[1] ?? '') : ''))).toEqual([
      'global file:///a.md',
      '',
    ])
    expect(
      (plain[2].content as string).startsWith('<resource server="docs" uri="file:///missing" unavailable="error">'),
    ).toBe(true)
    expect(global.sent).toEqual(['subscribe file:///a.md'])
    // From scope a1, its own server of that name wins over the global one.
    await subs.expand([message], [global, scoped, other], 'a1', 's1', limits)
    expect(scoped.sent).toEqual(['subscribe file:///a.md', 'subscribe file:///missing'])
    expect(other.sent).toEqual([])
  })

  it('a failed subscription is a warning and is tried again; a forgotten connection has nothing pending', async () => {
    const warnings: string[] = []
    const subs = new ResourceSubscriptions({
      live: () => true,
      log: () => {},
      warn: (message) => warnings.push(message),
      maxChars: () => 1000,
    })
    let refuse = true
    const c = connection()
    const flaky = {
      ...c,
      request: <T>(_signal: AbortSignal | undefined, send: (client: never, options: never) => Promise<T>) =>
        refuse
          ? Promise.reject(new Error('refused'))
          : send(
              {
                subscribeResource: async ({ uri }: { uri: string }) => void c.sent.push(`subscribe ${uri}`),
                unsubscribeResource: async () => {
                  throw new Error('gone')
                },
              } as never,
              { timeout: 1000 } as never,
            ),
    } as SubscribableConnection
    await subs.watch(flaky, 'file:///a.md', 's1')
    expect(warnings).toEqual(['MCP server "docs": subscribing to file:///a.md failed: refused'])
    refuse = false
    await subs.watch(flaky, 'file:///a.md', 's2')
    expect(c.sent).toEqual(['subscribe file:///a.md'])
    subs.updated(flaky, 'file:///a.md')
    subs.forget(flaky)
    expect(await subs.take('s1')).toEqual([])
    expect(await subs.take('s2')).toEqual([])
  })

  it('sessionSubscriptions logs an update in the live session of the store, and not in a deleted one', async () => {
    const ctx = new Context()
    await ctx.plugin(SessionStore)
    const warnings: string[] = []
    const subs = sessionSubscriptions(
      () => ctx.sessions,
      (message) => warnings.push(message),
      () => 1000,
    )
    const session = ctx.sessions.create({ cwd: '/', id: 'live' })
    ctx.sessions.create({ cwd: '/', id: 'deleted' })
    const c = connection()
    const scoped = { ...connection(), scope: 'a1' }
    await subs.watch(c, 'file:///a.md', 'live')
    await subs.watch(c, 'file:///a.md', 'deleted')
    await subs.watch(scoped, 'file:///a.md', 'live')
    ctx.sessions.delete('deleted')
    subs.updated(c, 'file:///a.md')
    subs.updated(scoped, 'file:///a.md')
    expect(session.events.filter((e) => e.type === 'mcp/resource-updated').map((e) => e.data)).toEqual([
      { server: 'docs', uri: 'file:///a.md' },
      { server: 'docs', uri: 'file:///a.md', scope: 'a1' },
    ])
    // Two connections of one name, one URI: one note each.
    expect((await subs.take('live')).map((n) => n.source.label)).toEqual([
      '@docs:file:///a.md (updated)',
      '@docs:file:///a.md (updated)',
    ])
    expect(warnings).toEqual([])
  })
})
