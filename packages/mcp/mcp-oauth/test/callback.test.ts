// The loopback callback on a real port: only /callback, only the state dsh is waiting for, once;
// an error redirect is the authorization server's refusal; a newer sign-in or close() ends the
// pending one; a busy preferred port falls back to a free one.
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { describe, expect, it } from 'vitest'
import { CallbackServer } from '../src/callback.ts'
import { McpAuthError } from '../src/errors.ts'

const get = async (port: number, path: string) => {
  const response = await fetch(`http://127.0.0.1:${port}${path}`)
  return { status: response.status, text: await response.text(), type: response.headers.get('content-type') }
}

describe('the loopback callback', () => {
  it('takes one code for the awaited state, and says why anything else is refused', async () => {
    const callback = new CallbackServer('srv <x>')
    const port = await callback.listen()
    expect(await callback.listen(1)).toBe(port)
    expect(callback.port).toBe(port)
    expect((await get(port, '/other')).status).toBe(404)
    expect(await get(port, '/callback?state=s1&code=abc')).toMatchObject({
      status: 400,
      text: expect.stringContaining('not the one dsh is waiting for'),
    })
    const code = callback.expect('s1')
    expect((await get(port, '/callback?state=wrong&code=abc')).status).toBe(400)
    const ok = await get(port, '/callback?state=s1&code=abc')
    expect(ok).toMatchObject({ status: 200, type: 'text/html; charset=utf-8' })
    expect(ok.text).toContain('Signed in to MCP server &#34;srv &#60;x&#62;&#34;. You can close this tab')
    expect(await code).toBe('abc')
    expect((await get(port, '/callback?state=s1&code=abc')).status).toBe(400)

    const refused = callback.expect('s2').catch((error: unknown) => error)
    const page = await get(port, '/callback?state=s2&error=access_denied&error_description=not%0Atoday')
    expect(page.status).toBe(400)
    expect(page.text).toContain('failed. You can close this tab.')
    expect(await refused).toMatchObject({
      reason: 'declined',
      message: 'the authorization server refused the sign-in: access_denied (not today)',
    })
    const noCode = callback.expect('s3').catch((error: unknown) => error)
    await get(port, '/callback?state=s3')
    expect(((await noCode) as McpAuthError).message).toBe('the authorization server refused the sign-in: no code')

    const replaced = callback.expect('s4').catch((error: unknown) => error)
    const stopped = callback.expect('s5').catch((error: unknown) => error)
    expect(await replaced).toMatchObject({ reason: 'failed', message: 'a newer sign-in replaced this one' })
    callback.close()
    expect(await stopped).toBeInstanceOf(McpAuthError)
    expect(((await stopped) as McpAuthError).message).toBe('the sign-in was stopped')
    expect(callback.port).toBeUndefined()
    await expect(get(port, '/callback')).rejects.toThrow()
  })

  it('a preferred port that is taken falls back to a free one', async () => {
    const busy = createServer()
    await new Promise<void>((resolve) => busy.listen(0, '127.0.0.1', resolve))
    const taken = (busy.address() as AddressInfo).port
    const callback = new CallbackServer('srv')
    const port = await callback.listen(taken)
    expect(port).not.toBe(taken)
    expect((await get(port, '/x')).status).toBe(404)
    callback.close()
    busy.close()
  })
})
