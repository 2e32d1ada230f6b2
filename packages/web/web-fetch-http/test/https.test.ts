// HTTPS through the pinned-address connection: the certificate is still verified against the host
// name in the URL (SNI and the name check use the name; only the address is fixed). A throwaway
// certificate for localhost is made with the openssl CLI and trusted through the global agent.
import { execFileSync } from 'node:child_process'
import { mkdtempSync, readFileSync } from 'node:fs'
import { createServer, globalAgent, type Server } from 'node:https'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { WebError } from '@dsh/web'
import * as provider from '../src/index.ts'

let openssl = true
try {
  execFileSync('openssl', ['version'], { stdio: 'ignore' })
} catch {
  openssl = false
}

describe.skipIf(!openssl)('web-fetch-http over HTTPS', () => {
  let server: Server
  let port = 0
  const previousCa = globalAgent.options.ca
  beforeAll(async () => {
    const dir = mkdtempSync(join(tmpdir(), 'dsh-web-tls-'))
    const key = join(dir, 'key.pem')
    const cert = join(dir, 'cert.pem')
    execFileSync(
      'openssl',
      [
        'req',
        '-x509',
        '-newkey',
        'ec',
        '-pkeyopt',
        'ec_paramgen_curve:prime256v1',
        '-nodes',
        '-keyout',
        key,
        '-out',
        cert,
        '-days',
        '1',
        '-subj',
        '/CN=localhost',
        '-addext',
        'subjectAltName=DNS:localhost',
      ],
      { stdio: 'ignore' },
    )
    server = createServer({ key: readFileSync(key), cert: readFileSync(cert) }, (req, res) => {
      res.writeHead(200, { 'content-type': 'text/plain' }).end(`secure ${req.headers.host}`)
    })
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
    port = (server.address() as AddressInfo).port
    globalAgent.options.ca = readFileSync(cert)
  })
  afterAll(async () => {
    globalAgent.options.ca = previousCa
    server.closeAllConnections()
    await new Promise((r) => server.close(r))
  })

  const fetcher = () => provider.createProvider(provider.Config({ allowedRanges: ['127.0.0.1/32', '::1/128'] }))

  it('verifies the certificate against the URL host name', async () => {
    const result = await fetcher().fetch({ url: `https://localhost:${port}/x` })
    expect(result.content).toBe(`secure localhost:${port}`)
  })

  it('an address the certificate does not name fails as TRANSPORT', async () => {
    const error = (await fetcher()
      .fetch({ url: `https://127.0.0.1:${port}/x` })
      .catch((e) => e)) as WebError
    expect(error).toBeInstanceOf(WebError)
    expect(error.code).toBe('TRANSPORT')
    expect(error.message).toMatch(/IP: 127\.0\.0\.1 is not in the cert's list|certificate/i)
  })
})
