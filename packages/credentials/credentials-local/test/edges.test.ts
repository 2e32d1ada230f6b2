// Edges of the local credentials provider that mutation testing (`pnpm mutation credentials-local`)
// showed no other test pinned: which names count as secret-shaped for scrubbing, a credentials file
// that cannot be read is never overwritten, an empty file takes a first entry, set()'s refusal of a
// non-string value, and describe() reporting a broken layer.
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { Context } from 'cordis'
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { CredentialError } from '@dsh/credentials'
import LocalCredentials, { type LocalCredentialsConfig } from '../src/index.ts'

const NAME = `CREDEDGE_${process.pid}_API_KEY`
let root: string
let home: string
let project: string

beforeEach(() => {
  root = mkdtempSync(join(tmpdir(), 'dsh-credentials-edges-'))
  home = join(root, 'home')
  project = join(root, 'project')
  mkdirSync(home)
  mkdirSync(project)
})
afterEach(() => rmSync(root, { recursive: true, force: true }))

async function boot(config: Partial<LocalCredentialsConfig> = {}) {
  const ctx = new Context()
  await ctx.plugin(LocalCredentials, { home, cwd: project, projectEnvAllow: [], checkAtStart: false, ...config })
  return ctx.credentials
}

async function failure(promise: Promise<unknown>): Promise<CredentialError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  )
  expect(error).toBeInstanceOf(CredentialError)
  return error as CredentialError
}

describe('knownValues: secret-shaped names', () => {
  it('a name that is, or ends in _, KEY, TOKEN, SECRET or PASSWORD is a secret; a name merely containing one is not', async () => {
    const secret = ['TOKEN', 'PASSWORD', 'SECRET', 'KEY', 'MY_API_KEY', 'DB_PASSWORD']
    const plain = ['MONKEY', 'KEY_ID', 'TOKENIZER', 'SECRETARY_NAME', 'PASSWORD_HINT']
    writeFileSync(join(home, '.env'), [...secret, ...plain].map((name) => `${name}=value-of-${name}`).join('\n') + '\n')
    const values = await (await boot()).knownValues()
    for (const name of secret) expect(values, name).toContain(`value-of-${name}`)
    for (const name of plain) expect(values, name).not.toContain(`value-of-${name}`)
  })
})

describe('set() on a credentials file it cannot read', () => {
  it('refuses with MALFORMED_FILE and leaves the path as it was', async () => {
    const path = join(home, '.credentials.yaml')
    mkdirSync(path, { mode: 0o700 }) // a directory where the file should be: EISDIR on read
    const error = await failure((await boot()).set(NAME, 'sk-edge-value'))
    expect(error.code).toBe('MALFORMED_FILE')
    expect(error.message).toBe(`cannot read ${path} (EISDIR)`)
  })

  it('an empty existing file takes its first entry', async () => {
    const path = join(home, '.credentials.yaml')
    writeFileSync(path, '')
    chmodSync(path, 0o600)
    const credentials = await boot()
    await credentials.set(NAME, 'first-value')
    expect(readFileSync(path, 'utf8')).toBe(`${NAME}: first-value\n`)
    expect(await credentials.get(NAME)).toBe('first-value')
  })

  it('a file that is not a mapping is refused, and nothing is written', async () => {
    const path = join(home, '.credentials.yaml')
    writeFileSync(path, '- just\n- a list\n')
    chmodSync(path, 0o600)
    const error = await failure((await boot()).set(NAME, 'x-value'))
    expect(error.code).toBe('MALFORMED_FILE')
    expect(error.message).toMatch(/; nothing was written$/)
    expect(readFileSync(path, 'utf8')).toBe('- just\n- a list\n')
  })
})

describe('set() values', () => {
  it('refuses a value that is not a string with one line naming the credential', async () => {
    const credentials = await boot()
    for (const value of [undefined, 42, { v: 1 }]) {
      const error = await failure(credentials.set(NAME, value as never))
      expect(error.code).toBe('INVALID_VALUE')
      expect(error.message).toBe(
        `credentials.set(${NAME}): the value must be a non-empty string (use unset to remove it)`,
      )
    }
  })
})

describe('describe() of a broken layer', () => {
  it('names the problem of an insecure or malformed credentials file, without a value', async () => {
    const path = join(home, '.credentials.yaml')
    writeFileSync(path, `${NAME}: sk-edge-secret\n`)
    chmodSync(path, 0o644)
    const insecure = await (await boot()).describe(NAME)
    const layer = insecure.layers.find((l) => l.id === 'credentials-file')!
    expect(layer.status).toBe('refused')
    expect(layer.problem).toMatch(/chmod 600/)
    chmodSync(path, 0o600)
    writeFileSync(path, `${NAME}: [unclosed\n`)
    const malformed = (await (await boot()).describe(NAME)).layers.find((l) => l.id === 'credentials-file')!
    expect(malformed.status).toBe('malformed')
    expect(malformed.problem).toMatch(/malformed credentials file/)
    expect(JSON.stringify(insecure)).not.toContain('sk-edge-secret')
  })
})
