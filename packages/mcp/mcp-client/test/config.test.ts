// The checking of one `mcpServers` entry's `oauth` field (how dsh signs in to a remote server that
// answers 401), and what a project entry pins for project trust (the digests of the project files
// its command line runs). units.test.ts covers the rest of the entry. Mutation testing
// (`pnpm mutation mcp-client`) showed `oauth` with almost no test of its own: every accepted
// shape and every refusal is written out here, with the one-line reason a user reads.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createHash } from 'node:crypto'
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { checkServer, projectTrustItems, serverFileDigests } from '../src/config.ts'

const options = {
  source: 'config' as const,
  origin: 'the row',
  cwd: '/work/project',
  env: { CID: 'client-7', SECRET: 's3cret', PORTLESS: '' } as Record<string, string | undefined>,
}
const URL_ = 'https://mcp.example.com/mcp'

/** The checked `oauth` of a remote entry, or its one-line refusal. */
function oauth(value: unknown): unknown {
  const checked = checkServer('srv', { url: URL_, oauth: value }, options)
  if ('invalid' in checked) return { invalid: checked.invalid }
  if ('spec' in checked && checked.spec.transport !== 'stdio') return checked.spec.oauth
  throw new Error(`unexpected ${JSON.stringify(checked)}`)
}
const refused = (value: unknown) => (oauth(value) as { invalid?: string }).invalid

describe('the oauth field of a remote entry', () => {
  it('absent or true: sign in through the browser when the server asks; false: never', () => {
    expect(oauth(undefined)).toEqual({ grant: 'authorization_code' })
    expect(oauth(true)).toEqual({ grant: 'authorization_code' })
    expect(oauth(false)).toBe(false)
    // An empty object is the default too.
    expect(oauth({})).toEqual({ grant: 'authorization_code' })
  })

  it('carries every setting given, with ${VAR} expanded, and nothing that was not given', () => {
    expect(
      oauth({
        clientId: '${CID}',
        clientSecret: '${SECRET}',
        clientMetadataUrl: 'https://app.example.com/client.json',
        scope: 'read write',
        callbackPort: 8765,
        clientName: 'dsh on ${CID}',
      }),
    ).toStrictEqual({
      grant: 'authorization_code',
      clientId: 'client-7',
      clientSecret: 's3cret',
      clientMetadataUrl: 'https://app.example.com/client.json',
      scope: 'read write',
      callbackPort: 8765,
      clientName: 'dsh on client-7',
    })
    expect(oauth({ grant: 'authorization_code', scope: 'x' })).toStrictEqual({
      grant: 'authorization_code',
      scope: 'x',
    })
    // The lowest and highest port are ports.
    expect(oauth({ callbackPort: 1 })).toStrictEqual({ grant: 'authorization_code', callbackPort: 1 })
    expect(oauth({ callbackPort: 65535 })).toStrictEqual({ grant: 'authorization_code', callbackPort: 65535 })
  })

  it('client_credentials: a client id with a secret, or with a private key and its algorithm', () => {
    expect(oauth({ grant: 'client_credentials', clientId: 'm2m', clientSecret: '${SECRET}' })).toStrictEqual({
      grant: 'client_credentials',
      clientId: 'm2m',
      clientSecret: 's3cret',
    })
    expect(
      oauth({ grant: 'client_credentials', clientId: 'm2m', privateKey: 'PEM', algorithm: 'ES256' }),
    ).toStrictEqual({ grant: 'client_credentials', clientId: 'm2m', privateKey: 'PEM', algorithm: 'ES256' })
  })

  it('refuses what is not false or an object', () => {
    const message = '"oauth" must be false or an object ({clientId, clientSecret, scope, callbackPort, grant, ...})'
    for (const value of [null, 'yes', 0, 1, [], ['clientId']]) expect(refused(value)).toBe(message)
  })

  it('refuses a setting it does not know, naming the known ones', () => {
    expect(refused({ clientID: 'x' })).toBe(
      '"oauth.clientID" is not a known setting (known: grant, clientId, clientSecret, clientMetadataUrl, scope, callbackPort, privateKey, algorithm, clientName, idpTokenUrl, idToken, idpClientId, idpClientSecret)',
    )
    expect(refused({ scope: 'x', redirectUri: 'http://h' })).toMatch(/^"oauth\.redirectUri" is not a known setting/)
    // Every known setting is accepted by name (a typo in the list would refuse it).
    for (const key of ['clientMetadataUrl', 'algorithm', 'clientName', 'scope'])
      expect(refused({ [key]: key === 'clientMetadataUrl' ? 'https://h/c.json' : 'v' })).toBeUndefined()
  })

  it('each text setting must be a non-empty string; an unset variable in one is named', () => {
    for (const key of ['clientId', 'clientMetadataUrl', 'scope', 'privateKey', 'algorithm', 'clientName']) {
      for (const value of ['', 5, null, {}])
        expect(refused({ [key]: value })).toBe(`"oauth.${key}" must be a non-empty string`)
    }
    expect(refused({ clientId: 'c', clientSecret: '' })).toBe('"oauth.clientSecret" must be a non-empty string')
    expect(refused({ clientId: 'c', clientSecret: '${NOPE}' })).toBe(
      '"oauth.clientSecret" uses ${NOPE}, which is not set (set it, or write ${NOPE:-default})',
    )
    expect(refused({ scope: '${PORTLESS}' })).toMatch(/^"oauth\.scope" uses \$\{PORTLESS\}/)
    expect(oauth({ scope: '${PORTLESS:-all}' })).toStrictEqual({ grant: 'authorization_code', scope: 'all' })
  })

  it('refuses a grant other than the two it speaks', () => {
    expect(refused({ grant: 'password' })).toBe(
      '"oauth.grant" must be authorization_code, client_credentials or cross_app_access, not "password"',
    )
    expect(refused({ grant: 'client-credentials' })).toMatch(/not "client-credentials"$/)
    expect(refused({ grant: 3 })).toMatch(/not 3$/)
  })

  it('refuses a callback port that is not a port number', () => {
    for (const port of [0, -1, 65536, 80.5, '8080', Number.NaN, null])
      expect(refused({ callbackPort: port })).toBe('"oauth.callbackPort" must be a port number (1-65535)')
  })

  it('the client metadata document must be an https URL with a path', () => {
    for (const url of [
      'http://app.example.com/client.json',
      'https://app.example.com',
      'https://app.example.com/',
      'client.json',
    ])
      expect(refused({ clientMetadataUrl: url })).toBe('"oauth.clientMetadataUrl" must be an https URL with a path')
  })

  it('cross-app access: the identity provider, the ID token and its client, checked', () => {
    const xaa = { grant: 'cross_app_access', clientId: 'dsh', clientSecret: 's', idToken: 'id' }
    expect(
      oauth({ ...xaa, idpTokenUrl: 'https://idp.example.com/token', idpClientId: 'c', idpClientSecret: 'cs' }),
    ).toStrictEqual({
      grant: 'cross_app_access',
      clientId: 'dsh',
      clientSecret: 's',
      idToken: 'id',
      idpTokenUrl: 'https://idp.example.com/token',
      idpClientId: 'c',
      idpClientSecret: 'cs',
    })
    for (const host of ['127.0.0.1:9', 'localhost', '[::1]:8080'])
      expect(oauth({ ...xaa, idpTokenUrl: `http://${host}/token` })).toMatchObject({
        idpTokenUrl: `http://${host}/token`,
      })
    const needs = '"oauth.grant: cross_app_access" needs "oauth.idpTokenUrl" and "oauth.idToken"'
    expect(refused({ ...xaa, idToken: undefined, idpTokenUrl: 'https://idp/token' })).toBe(needs)
    expect(refused(xaa)).toBe(needs)
    for (const url of ['http://idp.example.com/token', 'ftp://localhost/token', 'not a url', 'http://127.0.0.2/token'])
      expect(refused({ ...xaa, idpTokenUrl: url })).toBe(
        '"oauth.idpTokenUrl" must be an https URL (http only on a loopback host)',
      )
    expect(refused({ ...xaa, idpTokenUrl: 'https://idp/token', idpClientSecret: 'cs' })).toBe(
      '"oauth.idpClientSecret" needs "oauth.idpClientId"',
    )
    expect(refused({ clientId: 'c', idToken: 'id' })).toBe(
      '"oauth.idToken" is only used with "oauth.grant: cross_app_access"',
    )
    expect(refused({ grant: 'client_credentials', clientId: 'c', clientSecret: 's', idpClientId: 'x' })).toBe(
      '"oauth.idpClientId" is only used with "oauth.grant: cross_app_access"',
    )
  })

  it('refuses settings that cannot work together', () => {
    expect(refused({ grant: 'client_credentials', clientSecret: 's' })).toBe(
      '"oauth.grant: client_credentials" needs "oauth.clientId"',
    )
    expect(refused({ grant: 'client_credentials' })).toBe('"oauth.grant: client_credentials" needs "oauth.clientId"')
    expect(refused({ grant: 'client_credentials', clientId: 'm2m' })).toBe(
      '"oauth.grant: client_credentials" needs "oauth.clientSecret" or "oauth.privateKey"',
    )
    expect(refused({ grant: 'client_credentials', clientId: 'm2m', algorithm: 'RS256' })).toBe(
      '"oauth.grant: client_credentials" needs "oauth.clientSecret" or "oauth.privateKey"',
    )
    expect(refused({ privateKey: 'PEM', clientId: 'c' })).toBe(
      '"oauth.privateKey" is only used with "oauth.grant: client_credentials" or "cross_app_access"',
    )
    expect(refused({ clientSecret: 's' })).toBe('"oauth.clientSecret" needs "oauth.clientId"')
  })

  it('a refused oauth makes the whole entry invalid, and the other entries are untouched', () => {
    const bad = checkServer('srv', { url: URL_, oauth: { grant: 'password' } }, options)
    expect(bad).toEqual({
      name: 'srv',
      source: 'config',
      origin: 'the row',
      invalid: '"oauth.grant" must be authorization_code, client_credentials or cross_app_access, not "password"',
    })
    expect(checkServer('ok', { url: URL_ }, options)).toHaveProperty('spec')
  })

  it('a remote entry without a timeout has no timeoutMs at all', () => {
    const checked = checkServer('srv', { url: URL_ }, options) as { spec: object }
    expect(checked.spec).not.toHaveProperty('timeoutMs')
  })
})

describe('what a project entry pins for trust', () => {
  let dir: string
  const digest = (text: string) => createHash('sha256').update(text).digest('hex')
  beforeAll(() => {
    dir = realpathSync(mkdtempSync(join(tmpdir(), 'dsh-mcp-config-')))
    mkdirSync(join(dir, 'tools'))
    writeFileSync(join(dir, 'tools', 'server.js'), 'console.log(1)\n')
    writeFileSync(join(dir, 'run.sh'), '#!/bin/sh\n')
  })
  afterAll(() => rmSync(dir, { recursive: true, force: true }))

  it('the program, or an interpreter and its script, when they are project files', () => {
    expect(serverFileDigests({ command: './run.sh' }, dir)).toEqual({ 'run.sh': digest('#!/bin/sh\n') })
    expect(serverFileDigests({ command: 'node', args: ['tools/server.js', '--port', '1'] }, dir)).toEqual({
      'tools/server.js': digest('console.log(1)\n'),
    })
    // A relative script is found from the entry's own cwd.
    expect(serverFileDigests({ command: 'node', args: ['server.js'], cwd: 'tools' }, dir)).toEqual({
      'tools/server.js': digest('console.log(1)\n'),
    })
    // Without that cwd the same script is not a project file.
    expect(serverFileDigests({ command: 'node', args: ['server.js'] }, dir)).toEqual({})
    // Arguments that are not a list are not read as a script.
    expect(serverFileDigests({ command: 'node', args: 'tools/server.js' }, dir)).toEqual({})
  })

  it('nothing for an entry that runs no command', () => {
    expect(serverFileDigests({ url: 'https://h/mcp' }, dir)).toEqual({})
    expect(serverFileDigests({ command: 7 }, dir)).toEqual({})
    expect(serverFileDigests('./run.sh', dir)).toEqual({})
    expect(serverFileDigests(null, dir)).toEqual({})
  })

  it('a trust item pins those digests; an entry that is neither a command nor a url is shown as written', () => {
    const items = projectTrustItems(
      { local: { command: './run.sh' }, strange: { transport: 'ws' }, hole: undefined, numeric: { url: 5 } },
      '/p/.mcp.json',
      dir,
    )
    expect(items.map((item) => [item.name, item.display])).toEqual([
      ['local', './run.sh'],
      ['strange', '{"transport":"ws"}'],
      ['hole', 'undefined'],
      ['numeric', '{"url":5}'],
    ])
    expect(items[0].run).toEqual({ entry: { command: './run.sh' }, files: { 'run.sh': digest('#!/bin/sh\n') } })
    expect(items[2].run).toEqual({ entry: null, files: {} })
  })
})
