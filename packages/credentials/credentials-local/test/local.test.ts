import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { Context, type Message as LogMessage } from 'cordis'
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync, existsSync } from 'node:fs'
import { homedir, tmpdir } from 'node:os'
import { join } from 'node:path'
import { CredentialError } from '@dsh/credentials'
import LocalCredentials, { resolvePaths, type LocalCredentialsConfig } from '../src/index.ts'

// Distinct per run so the inherited environment of the test process cannot collide.
const NAME = `CREDTEST_${process.pid}_API_KEY`
const SECRET = 'sk-test-7f3a9c1e-do-not-print'
let root: string
let home: string
let project: string
let logs: LogMessage[] = []

beforeEach(() => {
  root = mkdtempSync(join(tmpdir(), 'dsh-credentials-'))
  home = join(root, 'home')
  project = join(root, 'project')
  mkdirSync(home)
  mkdirSync(project)
})

afterEach(() => {
  delete process.env[NAME]
  rmSync(root, { recursive: true, force: true })
  // Nothing this package logged may contain a secret value.
  for (const m of logs) expect(JSON.stringify(m.args)).not.toContain('sk-')
})

async function boot(config: Partial<LocalCredentialsConfig> = {}) {
  const ctx = new Context()
  logs = []
  ctx.logger.exporter({ levels: { default: 5 }, export: (m) => void logs.push(m) })
  // Lookups are tested against files that break after start; the start check has its own tests.
  await ctx.plugin(LocalCredentials, { home, cwd: project, projectEnvAllow: [NAME], checkAtStart: false, ...config })
  return ctx.credentials
}

const credentialsFile = () => join(home, '.credentials.yaml')
function writeCredentials(text: string, mode = 0o600) {
  writeFileSync(credentialsFile(), text)
  chmodSync(credentialsFile(), mode)
}

async function failure(promise: Promise<unknown>): Promise<CredentialError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  )
  expect(error).toBeInstanceOf(CredentialError)
  return error as CredentialError
}

describe('resolvePaths', () => {
  it('puts .env and .credentials.yaml under $DSH_HOME and the project .env in the cwd', () => {
    expect(resolvePaths({}, { DSH_HOME: '/h' }, '/p')).toEqual({
      projectEnv: '/p/.env',
      homeEnv: '/h/.env',
      credentialsFile: '/h/.credentials.yaml',
    })
    expect(resolvePaths({ projectEnv: false, credentialsFile: '/c.yaml' }, { DSH_HOME: '/h' }, '/p')).toEqual({
      homeEnv: '/h/.env',
      credentialsFile: '/c.yaml',
    })
    expect(resolvePaths({ cwd: '~/proj', credentialsFile: '~/k.yaml' }, { DSH_HOME: '/h' }, '/p')).toMatchObject({
      projectEnv: join(homedir(), 'proj', '.env'),
      credentialsFile: join(homedir(), 'k.yaml'),
    })
  })
})

describe('precedence', () => {
  it('env > project .env > home .env > credentials file, each layer shadowing the ones below', async () => {
    writeCredentials(`${NAME}: from-file\n`)
    writeFileSync(join(home, '.env'), `${NAME}=from-home-env\n`)
    writeFileSync(join(project, '.env'), `# project\n${NAME}="from-project-env"\n`)
    process.env[NAME] = 'from-env'
    const credentials = await boot()

    expect(await credentials.get(NAME)).toBe('from-env')
    let described = await credentials.describe(NAME)
    expect(described.source?.id).toBe('env')
    expect(described.shadowed.map((l) => l.id)).toEqual(['project-env', 'home-env', 'credentials-file'])

    delete process.env[NAME]
    expect(await credentials.get(NAME)).toBe('from-project-env')
    rmSync(join(project, '.env'))
    expect(await credentials.get(NAME)).toBe('from-home-env')
    rmSync(join(home, '.env'))
    expect(await credentials.get(NAME)).toBe('from-file')
    described = await credentials.describe(NAME)
    expect(described).toMatchObject({
      configured: true,
      source: { id: 'credentials-file', writable: true },
      shadowed: [],
    })
    writeCredentials('OTHER: x\n')
    expect(await credentials.get(NAME)).toBeUndefined()
    expect((await credentials.describe(NAME)).configured).toBe(false)
  })

  it('attributes an environment value copied from a .env file (by the launcher) to that file', async () => {
    writeFileSync(join(home, '.env'), `${NAME}=same\n`)
    process.env[NAME] = 'same'
    const credentials = await boot()
    expect(await credentials.get(NAME)).toBe('same')
    expect((await credentials.describe(NAME)).source?.id).toBe('home-env')
    process.env[NAME] = 'exported'
    expect((await credentials.describe(NAME)).source?.id).toBe('env')
  })

  it('treats a blank value as unset so a lower layer is used', async () => {
    process.env[NAME] = ''
    writeFileSync(join(project, '.env'), `${NAME}=\n`)
    writeFileSync(join(home, '.env'), `${NAME}=home\n`)
    expect(await (await boot()).get(NAME)).toBe('home')
  })

  it('skips the project .env when projectEnv is off', async () => {
    writeFileSync(join(project, '.env'), `${NAME}=project\n`)
    writeFileSync(join(home, '.env'), `${NAME}=home\n`)
    const credentials = await boot({ projectEnv: false })
    expect(await credentials.get(NAME)).toBe('home')
    expect((await credentials.describe(NAME)).layers.map((l) => l.id)).toEqual(['env', 'home-env', 'credentials-file'])
  })

  it('reads only allowlisted credential names from the project .env, every name from the home .env', async () => {
    writeFileSync(
      join(project, '.env'),
      `${NAME}=project\nDEEPSEEK_BASE_URL=http://attacker.invalid\nOPENAI_API_KEY=sk-p\n`,
    )
    writeFileSync(join(home, '.env'), `DEEPSEEK_BASE_URL=http://home.invalid\nDSH_HOME=/elsewhere\n`)
    const strict = await boot({ projectEnvAllow: [] })
    expect(await strict.get(NAME)).toBeUndefined()
    expect(await strict.get('OPENAI_API_KEY')).toBe(process.env.OPENAI_API_KEY ?? 'sk-p')
    expect(await strict.get('DEEPSEEK_BASE_URL')).toBe(process.env.DEEPSEEK_BASE_URL ?? 'http://home.invalid')
    expect(await strict.get('DSH_HOME')).toBe(process.env.DSH_HOME)
    const described = await strict.describe('DEEPSEEK_BASE_URL')
    expect(described.layers.find((l) => l.id === 'project-env')?.label).toContain('provider credentials only')
    expect(await (await boot()).get(NAME)).toBe('project')
  })

  it('takes extra names from DSH_PROJECT_ENV_ALLOW in the environment, and refuses a non-credential name at load', async () => {
    writeFileSync(join(project, '.env'), `${NAME}=project\n`)
    process.env.DSH_PROJECT_ENV_ALLOW = NAME
    try {
      expect(await (await boot({ projectEnvAllow: [] })).get(NAME)).toBe('project')
    } finally {
      delete process.env.DSH_PROJECT_ENV_ALLOW
    }
    const root = new Context()
    const fiber = root.plugin(LocalCredentials, { home, cwd: project, projectEnvAllow: ['DEEPSEEK_BASE_URL'] })
    await expect(fiber).rejects.toThrow('config.projectEnvAllow: "DEEPSEEK_BASE_URL" is not a credential name')
    expect(root.get('credentials')).toBeUndefined()
  })

  it('reports a malformed .env line by file and line, never its content', async () => {
    writeFileSync(join(home, '.env'), `# keys\n${SECRET}\n`)
    const credentials = await boot()
    const error = await failure(credentials.get(NAME))
    expect(error.code).toBe('MALFORMED_FILE')
    expect(error.message).toBe(`${join(home, '.env')}:2: malformed .env file: expected NAME=value (or a # comment)`)
    expect((await credentials.describe(NAME)).layers.find((l) => l.id === 'home-env')?.status).toBe('malformed')
  })

  it('parses .env files with Node semantics (quotes, export-less, comments)', async () => {
    writeFileSync(join(home, '.env'), `# comment\n${NAME}='single quoted # not a comment'\n`)
    expect(await (await boot()).get(NAME)).toBe('single quoted # not a comment')
  })

  it('keeps credentials-file scalars as strings', async () => {
    writeCredentials(`${NAME}: 000123\n`)
    expect(await (await boot()).get(NAME)).toBe('000123')
  })
})

describe('the 0600 rule', () => {
  it('refuses a group- or world-readable credentials file with a chmod hint, without the value', async () => {
    writeCredentials(`${NAME}: ${SECRET}\n`, 0o644)
    const credentials = await boot()
    const error = await failure(credentials.get(NAME))
    expect(error.code).toBe('INSECURE_FILE')
    expect(error.message).toContain(`chmod 600 ${credentialsFile()}`)
    expect(error.message).toContain('0644')
    expect(error.message).not.toContain(SECRET)
    const described = await credentials.describe(NAME)
    expect(described.configured).toBe(false)
    expect(described.layers.at(-1)).toMatchObject({ id: 'credentials-file', status: 'refused' })
    expect(JSON.stringify(described)).not.toContain(SECRET)
    chmodSync(credentialsFile(), 0o640)
    expect((await failure(credentials.get(NAME))).code).toBe('INSECURE_FILE')
    chmodSync(credentialsFile(), 0o600)
    expect(await credentials.get(NAME)).toBe(SECRET)
  })

  it('does not read the file at all when a higher layer answers', async () => {
    writeCredentials(`${NAME}: x\n`, 0o644)
    process.env[NAME] = 'env'
    expect(await (await boot()).get(NAME)).toBe('env')
  })

  it('set() creates the file with mode 0600, keeps comments and other entries, unset() removes one', async () => {
    const credentials = await boot()
    await credentials.set(NAME, SECRET)
    expect(statSync(credentialsFile()).mode & 0o777).toBe(0o600)
    expect(await credentials.get(NAME)).toBe(SECRET)
    writeCredentials(`# my keys\nOTHER_KEY: other # kept\n${NAME}: old\n`)
    await credentials.set(NAME, 'new: value with # and quotes"')
    expect(await credentials.get(NAME)).toBe('new: value with # and quotes"')
    expect(await credentials.get('OTHER_KEY')).toBe('other')
    expect(readFileSync(credentialsFile(), 'utf8')).toContain('# my keys\nOTHER_KEY: other # kept\n')
    await credentials.unset(NAME)
    expect(await credentials.get(NAME)).toBeUndefined()
    expect(readFileSync(credentialsFile(), 'utf8')).toBe('# my keys\nOTHER_KEY: other # kept\n')
    expect(statSync(credentialsFile()).mode & 0o777).toBe(0o600)
  })

  it('set() refuses to touch an insecure file', async () => {
    writeCredentials('OTHER_KEY: x\n', 0o604)
    const credentials = await boot()
    expect((await failure(credentials.set(NAME, SECRET))).code).toBe('INSECURE_FILE')
    expect(readFileSync(credentialsFile(), 'utf8')).toBe('OTHER_KEY: x\n')
  })

  it('set() creates a missing home directory', async () => {
    const credentials = await boot({ home: join(root, 'fresh', 'home') })
    await credentials.set(NAME, SECRET)
    expect(existsSync(join(root, 'fresh', 'home', '.credentials.yaml'))).toBe(true)
  })

  it('serializes concurrent set() calls without losing entries', async () => {
    const credentials = await boot()
    await Promise.all(Array.from({ length: 20 }, (_, i) => credentials.set(`K_${i}`, `v${i}`)))
    for (let i = 0; i < 20; i++) expect(await credentials.get(`K_${i}`)).toBe(`v${i}`)
  })
})

describe('the start check', () => {
  async function start(): Promise<unknown> {
    const root = new Context()
    const fiber = root.plugin(LocalCredentials, { home, cwd: project })
    const error = await Promise.resolve(fiber).then(
      () => undefined,
      (e: unknown) => e,
    )
    if (!error) expect(root.get('credentials')).toBeDefined()
    else expect(root.get('credentials')).toBeUndefined()
    return error
  }

  it('starts with good, missing or empty files', async () => {
    expect(await start()).toBeUndefined()
    writeCredentials(`${NAME}: ${SECRET}\n`)
    writeFileSync(join(home, '.env'), `${NAME}=x\n`)
    writeFileSync(join(project, '.env'), '')
    expect(await start()).toBeUndefined()
  })

  it('fails the row on a malformed, insecure or nested credentials file, or a malformed .env, naming file and place only', async () => {
    writeCredentials(`${NAME}: ${SECRET}\n${NAME}: "${SECRET}-unterminated\n`)
    const error = await start()
    expect(error).toBeInstanceOf(CredentialError)
    expect((error as CredentialError).message).toMatch(
      new RegExp(`^${credentialsFile().replace(/[.]/g, '\\.')}:\\d+:\\d+: malformed credentials file`),
    )
    expect((error as CredentialError).message).not.toContain('sk-')

    writeCredentials(`${NAME}: ${SECRET}\n`, 0o644)
    expect(((await start()) as CredentialError).code).toBe('INSECURE_FILE')

    writeCredentials(`# mine\n${NAME}:\n  nested: ${SECRET}\n`)
    expect(((await start()) as CredentialError).message).toBe(
      `${credentialsFile()}:2: ${NAME}: the value is a mapping (valid: a plain string, as in ${NAME}: value)`,
    )

    writeCredentials('')
    writeFileSync(join(project, '.env'), `OPENAI_API_KEY=1\n${SECRET}\n`)
    expect(((await start()) as CredentialError).message).toBe(
      `${join(project, '.env')}:2: malformed .env file: expected NAME=value (or a # comment)`,
    )
  })
})

describe('the start check of credentials-file entries', () => {
  async function start(config: Partial<LocalCredentialsConfig> = {}): Promise<string | undefined> {
    const root = new Context()
    const error = await Promise.resolve(root.plugin(LocalCredentials, { home, cwd: project, ...config })).then(
      () => undefined,
      (e: unknown) => e,
    )
    if (error === undefined) return undefined
    expect(error).toBeInstanceOf(CredentialError)
    expect((error as CredentialError).message).not.toContain(SECRET)
    return (error as CredentialError).message
  }

  it('a misspelt provider key: file, line, the name and the likely one', async () => {
    writeCredentials(`OPENAI_API_KEY: ${SECRET}\n\nDEEPSEEK_APIKEY: ${SECRET}\n`)
    expect(await start()).toBe(
      `${credentialsFile()}:3: DEEPSEEK_APIKEY: unknown credential name (did you mean "DEEPSEEK_API_KEY"?); if it is another plugin's credential, add it to the credentials row's config.knownNames`,
    )
    writeCredentials(`ANTHROPIC_KEY: ${SECRET}\n`)
    expect(await start()).toMatch(/:1: ANTHROPIC_KEY: unknown credential name \(did you mean "ANTHROPIC_API_KEY"\?\)/)
  })

  it('a name that is no credential name is refused with the rule and the likely name', async () => {
    writeCredentials(`deepseek-api-key: ${SECRET}\n`)
    expect(await start()).toBe(
      `${credentialsFile()}:1: "deepseek-api-key" is not a credential name (valid: letters, digits and "_", not starting with a digit; did you mean "DEEPSEEK_API_KEY"?)`,
    )
  })

  it('a value of several lines is refused by line, without the value', async () => {
    writeCredentials(`DEEPSEEK_API_KEY: |\n  ${SECRET}\n`)
    expect(await start()).toBe(
      `${credentialsFile()}:1: DEEPSEEK_API_KEY: the value holds a line break or control character (valid: one line of text, as in NAME: value)`,
    )
    writeCredentials(`DEEPSEEK_API_KEY:\n  - ${SECRET}\n`)
    expect(await start()).toMatch(/:1: DEEPSEEK_API_KEY: the value is a list \(valid: a plain string/)
  })

  it('accepts names unlike any known one, and a near name once listed in knownNames', async () => {
    writeCredentials(`GITHUB_TOKEN: ${SECRET}\nBRAVE_SEARCH_API_KEY: ${SECRET}\n${NAME}: ${SECRET}\n`)
    expect(await start()).toBeUndefined()
    // The provider's word with other words is another setting, not a typo: it must not stop a launch.
    writeCredentials(
      `DEEPSEEK_BASE_URL: http://x.invalid\nOPENAI_ORG_ID: org-1\nAZURE_OPENAI_ENDPOINT: https://a.invalid\n`,
    )
    expect(await start()).toBeUndefined()
    writeCredentials(`GROK_API_KEY: ${SECRET}\n`)
    expect(await start()).toMatch(/did you mean "GROQ_API_KEY"/)
    expect(await start({ knownNames: ['GROK_API_KEY'] })).toBeUndefined()
  })
})

describe('errors never reveal values', () => {
  it('reports a malformed credentials file by place and code only', async () => {
    writeCredentials(`${NAME}: ${SECRET}\n${NAME}: "${SECRET}-unterminated\n`)
    const credentials = await boot()
    const error = await failure(credentials.get(NAME))
    expect(error.code).toBe('MALFORMED_FILE')
    expect(error.message).toMatch(new RegExp(`${credentialsFile().replace(/[.]/g, '\\.')}:\\d+:\\d+`))
    expect(error.message).not.toContain(SECRET)
    expect(error.message).not.toContain('sk-')
    const described = await credentials.describe(NAME)
    expect(described.layers.at(-1)!.status).toBe('malformed')
    expect(JSON.stringify(described)).not.toContain('sk-')
    expect((await failure(credentials.set(NAME, 'x'))).message).not.toContain('sk-')
  })

  it('reports a nested value without printing it', async () => {
    writeCredentials(`${NAME}:\n  inner: ${SECRET}\n`)
    const error = await failure((await boot()).get(NAME))
    expect(error.message).toContain(NAME)
    expect(error.message).not.toContain(SECRET)
  })

  it('require() lists every place to set a missing credential, highest precedence first', async () => {
    const credentials = await boot()
    const error = await failure(credentials.require(NAME, 'the test API key'))
    expect(error.code).toBe('MISSING_CREDENTIAL')
    expect(error.details.credential).toBe(NAME)
    const message = error.message
    expect(message).toContain(`missing credential ${NAME} (the test API key)`)
    const places = [`export ${NAME}=`, join(project, '.env'), join(home, '.env'), credentialsFile()]
    const positions = places.map((p) => message.indexOf(p))
    expect(positions.every((p) => p >= 0)).toBe(true)
    expect([...positions].sort((a, b) => a - b)).toEqual(positions)
    process.env[NAME] = SECRET
    expect(await credentials.require(NAME)).toBe(SECRET)
  })

  it('describe() never includes a value', async () => {
    process.env[NAME] = SECRET
    writeFileSync(join(home, '.env'), `${NAME}=${SECRET}\n`)
    expect(JSON.stringify(await (await boot()).describe(NAME))).not.toContain(SECRET)
  })

  it('rejects invalid names and empty values', async () => {
    const credentials = await boot()
    expect((await failure(credentials.get('not a name'))).code).toBe('INVALID_NAME')
    expect((await failure(credentials.set(NAME, ''))).code).toBe('INVALID_VALUE')
  })
})

describe('knownValues (for scrubbing output)', () => {
  it('lists secret-shaped and allowlisted values of every layer and every credentials-file entry, not other settings', async () => {
    process.env[NAME] = 'env-secret-value-1'
    writeFileSync(join(project, '.env'), `OPENAI_API_KEY=project-secret-2\nDEEPSEEK_BASE_URL=http://attacker.invalid\n`)
    writeFileSync(join(home, '.env'), `MY_SERVICE_TOKEN=home-secret-3\nDEEPSEEK_BASE_URL=http://home.invalid\n`)
    writeCredentials('odd_name: file-secret-4\n')
    const values = await (await boot()).knownValues()
    expect(values).toEqual(
      expect.arrayContaining(['env-secret-value-1', 'project-secret-2', 'home-secret-3', 'file-secret-4']),
    )
    expect(values.some((v) => v.startsWith('http'))).toBe(false)
  })
})
