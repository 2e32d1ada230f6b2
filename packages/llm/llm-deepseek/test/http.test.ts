import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { bodyReader, nodeFetch } from '../src/http.ts'

let url = ''
const server = createServer((req, res) => {
  if (req.url === '/slow') {
    res.writeHead(200, { 'content-type': 'text/event-stream' })
    res.write('data: one\n\n')
    return // never ends
  }
  let body = ''
  req.on('data', (d) => (body += d))
  req.on('end', () => {
    res.writeHead(201, { 'content-type': 'application/json', 'x-multi': ['a', 'b'], 'retry-after': '3' })
    res.end(JSON.stringify({ method: req.method, auth: req.headers.authorization, body }))
  })
})
beforeAll(async () => {
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
})
afterAll(() => new Promise<void>((r) => server.close(() => r())))

describe('nodeFetch', () => {
  it('sends method, headers and body and exposes status, headers and text', async () => {
    const res = await nodeFetch(`${url}/echo`, {
      method: 'POST',
      headers: { authorization: 'Bearer k' },
      body: 'hello',
    })
    expect(res).toMatchObject({ ok: true, status: 201 })
    expect(res.headers.get('Retry-After')).toBe('3')
    expect(res.headers.get('x-multi')).toBe('a, b')
    expect(res.headers.get('absent')).toBeNull()
    expect(JSON.parse(await res.text())).toEqual({ method: 'POST', auth: 'Bearer k', body: 'hello' })
  })

  it('streams the body as a web ReadableStream and aborts it mid-read', async () => {
    const controller = new AbortController()
    const res = await nodeFetch(`${url}/slow`, { signal: controller.signal })
    const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader()
    expect((await reader.read()).value).toBe('data: one\n\n')
    const pending = reader.read()
    controller.abort(new Error('stop now'))
    await expect(pending).rejects.toThrow(/stop now/)
  })

  it('bodyReader reads the body from the node stream; an abort mid-read rejects the pending read', async () => {
    const controller = new AbortController()
    const res = await nodeFetch(`${url}/slow`, { signal: controller.signal })
    const reader = bodyReader(res)!
    const first = await reader.read()
    expect(first.done).toBe(false)
    expect(Buffer.from(first.value!).toString('utf8')).toBe('data: one\n\n')
    const pending = reader.read()
    controller.abort(new Error('stop now'))
    await expect(pending).rejects.toThrow(/stop now/)
    // Any other Response (a real fetch's) has no node stream: the caller uses body.
    expect(bodyReader(new Response('x'))).toBeUndefined()
  })

  it('bodyReader reads a whole body to its end, and cancel releases it', async () => {
    const all = await nodeFetch(`${url}/echo`, { method: 'POST', body: 'abc' })
    const reader = bodyReader(all)!
    let text = ''
    for (let next = await reader.read(); !next.done; next = await reader.read())
      text += Buffer.from(next.value).toString('utf8')
    expect(JSON.parse(text)).toMatchObject({ method: 'POST', body: 'abc' })
    const slow = await nodeFetch(`${url}/slow`)
    const early = bodyReader(slow)!
    await early.read()
    await early.cancel()
    expect((await early.read()).done).toBe(true)
  })

  it('rejects an aborted signal, a refused connection and an unsupported protocol', async () => {
    const controller = new AbortController()
    controller.abort()
    await expect(nodeFetch(`${url}/echo`, { signal: controller.signal })).rejects.toThrow()
    await expect(nodeFetch('http://127.0.0.1:1/')).rejects.toMatchObject({ code: 'ECONNREFUSED' })
    await expect(nodeFetch('ftp://example.invalid/')).rejects.toThrow(/unsupported protocol ftp:/)
  })
})
