// The bookkeeping of resource subscriptions over a recording connection: one subscription per URI
// however many sessions mention it, again after a reconnect, none for a server without the
// capability, an update logged and queued only for live watching sessions (and unsubscribed once
// none is left), and the queued updates read again as one note per URI. A resumed session's log
// names what it watched (and an update the model was not shown); it is watched again once the
// server is connected.
import { describe, expect, it } from 'vitest'
import { loggedMentions } from '../src/logged-mentions.ts'
import { ResourceSubscriptions, type SubscribableConnection } from '../src/subscriptions.ts'

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
})
