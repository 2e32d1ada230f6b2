import { describe, expect, it } from 'vitest'
import { ConnectionError, ERROR_CODES, JsonRpcConnection, LineDecoder, RpcError } from '../src/index.ts'

// Frames are written from setImmediate; two turns of the check phase see every write that a
// synchronous call or its microtasks scheduled (a setTimeout(0) may run before or after them).
const tick = () => new Promise((r) => setImmediate(() => setImmediate(r)))

/** Two connections wired back to back, as server and client would be over a pipe. */
function pair(onRequest: (method: string, params: unknown) => unknown) {
  const toClient: string[] = []
  let client!: JsonRpcConnection
  const server = new JsonRpcConnection({ write: (t) => client.receive(t), onRequest })
  client = new JsonRpcConnection({
    write: (t) => server.receive(t),
    strict: true,
    onNotification: (method, params) => toClient.push(JSON.stringify({ method, params })),
  })
  return { server, client, toClient }
}

describe('LineDecoder', () => {
  it('splits lines across chunks, including a multi-byte character cut in two', () => {
    const lines: string[] = []
    const d = new LineDecoder((l) => lines.push(l))
    const bytes = Buffer.from('{"a":"é"}\r\n{"b":1}\n{"c"')
    d.push(bytes.subarray(0, 7))
    d.push(bytes.subarray(7))
    expect(lines).toEqual(['{"a":"é"}', '{"b":1}'])
    expect(d.end()).toBe('{"c"')
  })

  it('reports a line longer than the limit once and drops all of it, its tail included', () => {
    const lines: string[] = []
    const overflows: number[] = []
    const d = new LineDecoder(
      (l) => lines.push(l),
      10,
      (n) => overflows.push(n),
    )
    d.push('x'.repeat(11))
    d.push('y'.repeat(20))
    d.push('tail\nok\n')
    expect(overflows).toEqual([11])
    expect(lines).toEqual(['ok'])
    // A too-long line that arrives whole in one chunk is dropped too.
    d.push('{"jsonrpc":"2.0","id":1}\nfine\n')
    expect(overflows).toEqual([11, 24])
    expect(lines).toEqual(['ok', 'fine'])
    // An oversized unterminated line at the end of input is not returned.
    d.push('z'.repeat(12))
    expect(d.end()).toBeUndefined()
  })
})

describe('JsonRpcConnection', () => {
  it('round-trips requests, results, RpcErrors and notifications', async () => {
    const { server, client, toClient } = pair((method, params) => {
      if (method === 'echo') return params
      if (method === 'slow') return new Promise((r) => setTimeout(() => r({ late: true }), 5))
      if (method === 'busy') throw new RpcError('BUSY', 'a turn is running', { sessionId: 's' })
      throw new RpcError('METHOD_NOT_FOUND', `unknown method "${method}"`)
    })
    await expect(client.request('echo', { x: 1 })).resolves.toEqual({ x: 1 })
    await expect(client.request('slow')).resolves.toEqual({ late: true })
    const err = await client.request('busy').catch((e) => e)
    expect(err).toBeInstanceOf(RpcError)
    expect(err).toMatchObject({ code: 'BUSY', rpcCode: ERROR_CODES.BUSY, details: { sessionId: 's' } })
    await expect(client.request('nope')).rejects.toMatchObject({ code: 'METHOD_NOT_FOUND', rpcCode: -32601 })
    server.notify('session/event', { n: 1 })
    server.notify('session/event', { n: 2 })
    await tick()
    expect(toClient).toEqual([
      JSON.stringify({ method: 'session/event', params: { n: 1 } }),
      JSON.stringify({ method: 'session/event', params: { n: 2 } }),
    ])
  })

  it('an unexpected exception in a handler becomes INTERNAL, not a crash', async () => {
    const { client } = pair(() => {
      throw new TypeError('boom')
    })
    await expect(client.request('x')).rejects.toMatchObject({
      code: 'INTERNAL',
      message: expect.stringContaining('boom'),
    })
  })

  it('server mode answers malformed frames with parse / invalid-request errors and keeps going', async () => {
    const written: string[] = []
    const server = new JsonRpcConnection({
      write: (t) => written.push(...t.trim().split('\n')),
      onRequest: () => ({ ok: true }),
    })
    server.receive('{not json\n')
    server.receive('[1,2]\n')
    server.receive('{"id":3,"method":"x"}\n')
    server.receive('"a string"\n')
    server.receive('\n')
    server.receive('{"jsonrpc":"2.0","id":4,"method":"x"}\n')
    await tick()
    const frames = written.map((l) => JSON.parse(l))
    expect(frames[0]).toMatchObject({ id: null, error: { code: -32700, data: { code: 'PARSE_ERROR' } } })
    expect(frames[1]).toMatchObject({ id: null, error: { code: -32600, message: expect.stringContaining('batch') } })
    expect(frames[2]).toMatchObject({ id: 3, error: { code: -32600 } })
    expect(frames[3]).toMatchObject({ id: null, error: { code: -32600 } })
    expect(frames[4]).toEqual({ jsonrpc: '2.0', id: 4, result: { ok: true } })
    expect(frames).toHaveLength(5)
  })

  it('server mode answers an oversized frame once (id null) and serves the next one', async () => {
    const written: string[] = []
    const server = new JsonRpcConnection({
      write: (t) => written.push(...t.trim().split('\n')),
      onRequest: () => ({ ok: true }),
      maxFrameLength: 50,
    })
    const big = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'x', params: { pad: 'p'.repeat(80) } })
    server.receive(big.slice(0, 40))
    server.receive(big.slice(40) + '\n{"jsonrpc":"1.0","id":2,"method":"x"}\n')
    server.receive('{"jsonrpc":"2.0","id":3,"method":"x"}\n')
    await tick()
    const frames = written.map((l) => JSON.parse(l))
    expect(frames).toMatchObject([
      { id: null, error: { code: -32700, message: expect.stringContaining('longer than 50') } },
      { id: 2, error: { code: -32600 } },
      { id: 3, result: { ok: true } },
    ])
    expect(frames).toHaveLength(3)
  })

  it('strict mode treats a malformed frame as fatal and rejects pending requests', async () => {
    let fatal: ConnectionError | undefined
    const client = new JsonRpcConnection({ write: () => {}, strict: true, onFatal: (e) => (fatal = e) })
    const pending = client.request('initialize')
    client.receive('garbage\n')
    await expect(pending).rejects.toMatchObject({ name: 'ConnectionError', code: 'PROTOCOL_ERROR' })
    expect(fatal?.message).toContain('not JSON')
    await expect(client.request('again')).rejects.toBeInstanceOf(ConnectionError)
  })

  it('end() rejects pending requests with CONNECTION_CLOSED', async () => {
    const client = new JsonRpcConnection({ write: () => {}, strict: true })
    const pending = client.request('session/prompt', {})
    client.end(new ConnectionError('CONNECTION_CLOSED', 'server exited with code 1'))
    await expect(pending).rejects.toMatchObject({ code: 'CONNECTION_CLOSED', message: 'server exited with code 1' })
  })

  it('coalesces a synchronous burst into one write, in order', async () => {
    const writes: string[] = []
    const c = new JsonRpcConnection({ write: (t) => writes.push(t) })
    for (let i = 0; i < 100; i++) c.notify('n', { i })
    await tick()
    expect(writes).toHaveLength(1)
    expect(
      writes[0]
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l).params.i),
    ).toEqual([...Array(100).keys()])
  })
})
