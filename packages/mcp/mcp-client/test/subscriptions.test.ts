// The bookkeeping of resource subscriptions over a recording connection: one subscription per URI
// however many sessions mention it, again after a reconnect, none for a server without the
// capability, an update logged and queued only for live watching sessions (and unsubscribed once
// none is left), and the queued updates read again as one note per URI.
import { describe, expect, it } from 'vitest'
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
})
