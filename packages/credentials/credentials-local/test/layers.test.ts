// The four layers read directly, on real files with real permission bits: every error's code,
// message and path; a file that cannot be read (a directory, a symlink loop, a path under a
// regular file); odd YAML (non-scalar keys, aliases, lists, explicit keys without a value, a value
// on its own line); and how a misspelt name is guessed. Found by mutation testing
// (`pnpm mutation credentials-local`): these were its survivors and uncovered mutants.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { Context } from 'cordis'
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { CredentialError } from '@dsh/credentials'
import {
  credentialsFileLayer,
  dotenvLayer,
  envLayer,
  type LayerRead,
  mistypedCredentialName,
  parseCredentialsFile,
} from '../src/layers.ts'
import LocalCredentials, { type LocalCredentialsConfig } from '../src/index.ts'

let root: string
let n = 0
beforeAll(() => {
  root = mkdtempSync(join(tmpdir(), 'dsh-credentials-layers-'))
})
afterAll(() => rmSync(root, { recursive: true, force: true }))

/** A fresh directory per test: the tests share one temporary root. */
function dir(): string {
  const path = join(root, `t${++n}`)
  mkdirSync(path)
  return path
}

function file(text: string, mode = 0o600): string {
  const path = join(dir(), '.credentials.yaml')
  writeFileSync(path, text)
  chmodSync(path, mode)
  return path
}

function errorOf(read: LayerRead): CredentialError {
  if (read.status !== 'refused' && read.status !== 'malformed') throw new Error(`expected an error, got ${read.status}`)
  return read.error
}

function okOf(read: LayerRead) {
  if (read.status !== 'ok') throw new Error(`expected ok, got ${read.status}`)
  return read
}

describe('envLayer', () => {
  it('describes itself and drops unset and blank variables', async () => {
    const layer = envLayer({ SET_KEY: 'v', BLANK_KEY: '', UNSET_KEY: undefined })
    expect(layer.info).toEqual({ id: 'env', label: 'the environment', writable: false })
    const read = okOf(await layer.read())
    expect([...read.values]).toEqual([['SET_KEY', 'v']])
  })
})

describe('dotenvLayer', () => {
  it('describes itself as read-only', () => {
    const path = join(dir(), '.env')
    expect(dotenvLayer('home-env', path, 'label').info).toEqual({
      id: 'home-env',
      label: 'label',
      path,
      writable: false,
    })
  })

  it('a missing file, or a path under a regular file, is absent', async () => {
    const d = dir()
    expect(await dotenvLayer('home-env', join(d, '.env'), 'x').read()).toEqual({ status: 'absent' })
    writeFileSync(join(d, 'plain'), '')
    expect(await dotenvLayer('home-env', join(d, 'plain', '.env'), 'x').read()).toEqual({ status: 'absent' })
  })

  it('a file that cannot be read (a directory, a symlink loop) is refused with the path and the errno', async () => {
    const d = dir()
    const asDir = join(d, 'dir.env')
    mkdirSync(asDir)
    const loop = join(d, 'loop.env')
    symlinkSync(loop, loop)
    for (const [path, code] of [
      [asDir, 'EISDIR'],
      [loop, 'ELOOP'],
    ]) {
      const read = await dotenvLayer('project-env', path, 'x').read()
      expect(read.status).toBe('refused')
      const error = errorOf(read)
      expect(error.code).toBe('MALFORMED_FILE')
      expect(error.message).toBe(`cannot read ${path} (${code})`)
      expect(error.details).toEqual({ path })
    }
  })

  it('a malformed line names the file and line in the error details', async () => {
    const path = join(dir(), '.env')
    writeFileSync(path, 'GOOD_KEY=1\nnot a line\n')
    const error = errorOf(await dotenvLayer('home-env', path, 'x').read())
    expect(error.code).toBe('MALFORMED_FILE')
    expect(error.message).toMatch(new RegExp(`^${path.replace(/[.]/g, '\\.')}:2: malformed \\.env file: `))
    expect(error.details).toEqual({ path })
  })

  it('DSH_HOME is ignored in the home .env only; the project layer reads what its allowlist names', async () => {
    const path = join(dir(), '.env')
    writeFileSync(path, 'DSH_HOME=/elsewhere\nA_KEY=a\n')
    expect(okOf(await dotenvLayer('home-env', path, 'x').read()).values).toEqual(new Map([['A_KEY', 'a']]))
    expect(okOf(await dotenvLayer('project-env', path, 'x').read()).values).toEqual(
      new Map([
        ['DSH_HOME', '/elsewhere'],
        ['A_KEY', 'a'],
      ]),
    )
    expect(okOf(await dotenvLayer('project-env', path, 'x', new Set(['DSH_HOME'])).read()).values).toEqual(
      new Map([['DSH_HOME', '/elsewhere']]),
    )
  })
})

describe('credentialsFileLayer: reading the file', () => {
  it('describes itself as writable', () => {
    const path = join(dir(), '.credentials.yaml')
    expect(credentialsFileLayer(path).info).toEqual({
      id: 'credentials-file',
      label: `${path} (mode 0600)`,
      path,
      writable: true,
    })
  })

  it('a missing file, or a path under a regular file, is absent', async () => {
    const d = dir()
    expect(await credentialsFileLayer(join(d, '.credentials.yaml')).read()).toEqual({ status: 'absent' })
    writeFileSync(join(d, 'plain'), '')
    expect(await credentialsFileLayer(join(d, 'plain', '.credentials.yaml')).read()).toEqual({ status: 'absent' })
  })

  it('a symlink loop (stat fails) and a 0700 directory (read fails) are refused with the errno', async () => {
    const d = dir()
    const loop = join(d, 'loop.yaml')
    symlinkSync(loop, loop)
    const asDir = join(d, 'dir.yaml')
    mkdirSync(asDir, { mode: 0o700 })
    chmodSync(asDir, 0o700)
    for (const [path, code] of [
      [loop, 'ELOOP'],
      [asDir, 'EISDIR'],
    ]) {
      const read = await credentialsFileLayer(path).read()
      expect(read.status).toBe('refused')
      const error = errorOf(read)
      expect(error.code).toBe('MALFORMED_FILE')
      expect(error.message).toBe(`cannot read ${path} (${code})`)
      expect(error.details).toEqual({ path })
    }
  })

  it('group or world bits refuse the file with INSECURE_FILE and its path; 0400 is accepted', async () => {
    for (const mode of [0o640, 0o604, 0o610, 0o601]) {
      const path = file('A_KEY: a\n', mode)
      const error = errorOf(await credentialsFileLayer(path).read())
      expect(error.code).toBe('INSECURE_FILE')
      expect(error.message).toBe(
        `refusing to read ${path}: its mode is 0${mode.toString(8)}, readable beyond its owner; run: chmod 600 ${path}`,
      )
      expect(error.details).toEqual({ path })
    }
    const path = file('A_KEY: a\n', 0o400)
    expect(okOf(await credentialsFileLayer(path).read()).values).toEqual(new Map([['A_KEY', 'a']]))
  })

  it('an empty file or one of comments holds nothing', async () => {
    for (const text of ['', '# only a comment\n']) {
      expect(await credentialsFileLayer(file(text)).read()).toEqual({ status: 'ok', values: new Map(), problems: [] })
    }
  })

  it('a parse error names line and column and the parser code, never the text', async () => {
    const path = file('A_KEY: a\nB_KEY: [sk-secret\n')
    const error = errorOf(await credentialsFileLayer(path).read())
    expect(error.code).toBe('MALFORMED_FILE')
    expect(error.message).toMatch(
      new RegExp(
        `^${path.replace(/[.]/g, '\\.')}:\\d+:\\d+: malformed credentials file \\([A-Z_]+\\); expected lines of NAME: value$`,
      ),
    )
    expect(error.details).toEqual({ path })
    expect(error.message).not.toContain('sk-secret')
  })

  it('a top level that is not a mapping is refused with the rule', () => {
    const { error } = parseCredentialsFile('/p', '- a\n- b\n')
    expect(error?.code).toBe('MALFORMED_FILE')
    expect(error?.message).toBe('/p: malformed credentials file: the top level must be a mapping of NAME: value')
    expect(error?.details).toEqual({ path: '/p' })
    expect(parseCredentialsFile('/p', 'A: 0123\n').error).toBeUndefined()
  })
})

describe('credentialsFileLayer: entries', () => {
  it('skips non-scalar keys and explicit keys without a value, and blank or null values', async () => {
    const path = file('[a, b]: v\n? LONE_KEY\nEMPTY_KEY: ""\nNULL_KEY:\nA_KEY: a\n')
    const read = okOf(await credentialsFileLayer(path).read())
    expect(read.values).toEqual(new Map([['A_KEY', 'a']]))
    expect(read.problems).toEqual([])
  })

  it('a list, an alias or a mapping as value is an error naming what it is, with code, path and name', async () => {
    const path = file('LIST_KEY: [x, y]\nANCHOR_KEY: &v plain\nALIAS_KEY: *v\nMAP_KEY: {a: b}\n')
    const read = okOf(await credentialsFileLayer(path).read())
    const cases: [string, number, string][] = [
      ['LIST_KEY', 1, 'a list'],
      ['ALIAS_KEY', 3, 'an alias'],
      ['MAP_KEY', 4, 'a mapping'],
    ]
    for (const [name, line, kind] of cases) {
      const error = read.values.get(name) as CredentialError
      expect(error).toBeInstanceOf(CredentialError)
      expect(error.code).toBe('MALFORMED_FILE')
      expect(error.message).toBe(
        `${path}:${line}: ${name}: the value is ${kind} (valid: a plain string, as in ${name}: value)`,
      )
      expect(error.details).toEqual({ path, credential: name })
    }
    expect(read.values.get('ANCHOR_KEY')).toBe('plain')
  })

  it('a value with a line break is reported at the line the value starts on', async () => {
    const path = file('A_KEY:\n  "one\\ntwo"\n')
    const error = okOf(await credentialsFileLayer(path).read()).values.get('A_KEY') as CredentialError
    expect(error).toBeInstanceOf(CredentialError)
    expect(error.code).toBe('MALFORMED_FILE')
    expect(error.message).toBe(
      `${path}:2: A_KEY: the value holds a line break or control character (valid: one line of text, as in NAME: value)`,
    )
    expect(error.details).toEqual({ path, credential: 'A_KEY' })
  })

  it('a name that is no credential name: code, path, the name cut to 80 characters, and the guess', async () => {
    const long = `X-${'Y'.repeat(100)}`
    const path = file(`${long}: v\nAB-CD-EF-GH-KEY: v\nAB_CD_EF_GH_KEY: w\nAB-CD-EF-GH-KEX: v\n`)
    const read = okOf(await credentialsFileLayer(path, new Set(['AB_CD_EF_GH_KEY'])).read())
    expect(read.problems).toHaveLength(3)
    const [first, second, third] = read.problems!
    expect(first!.code).toBe('MALFORMED_FILE')
    expect(first!.details).toEqual({ path })
    expect(first!.message).toBe(
      `${path}:1: ${JSON.stringify(long).slice(0, 80)} is not a credential name (valid: letters, digits and "_", not starting with a digit)`,
    )
    // Four characters away from the known name, beyond didYouMean's reach on the raw text: the
    // guess comes from the name with its invalid characters turned into "_".
    expect(second!.message).toBe(
      `${path}:2: "AB-CD-EF-GH-KEY" is not a credential name (valid: letters, digits and "_", not starting with a digit; did you mean "AB_CD_EF_GH_KEY"?)`,
    )
    // One edit from the known name once underscored, five from the raw text.
    expect(third!.message).toBe(
      `${path}:4: "AB-CD-EF-GH-KEX" is not a credential name (valid: letters, digits and "_", not starting with a digit; did you mean "AB_CD_EF_GH_KEY"?)`,
    )
  })

  it('a misspelt known name: code, path and the name in the details', async () => {
    const path = file('OPENAI_APIKEY: v\n')
    const [problem] = okOf(await credentialsFileLayer(path, new Set(['OPENAI_API_KEY'])).read()).problems!
    expect(problem!.code).toBe('MALFORMED_FILE')
    expect(problem!.details).toEqual({ path, credential: 'OPENAI_APIKEY' })
    expect(problem!.message).toMatch(/: OPENAI_APIKEY: unknown credential name \(did you mean "OPENAI_API_KEY"\?\)/)
  })
})

describe('mistypedCredentialName', () => {
  it('the nearest of several known names sharing the first word, whatever their order', () => {
    const known = ['OPENAI_SECRET_API_KEY', 'OPENAI_API_KEY', 'OPENAI_ORG_API_KEY']
    expect(mistypedCredentialName('OPENAI_KEY', new Set(known))).toBe('OPENAI_API_KEY')
    expect(mistypedCredentialName('OPENAI_KEY', new Set([...known].reverse()))).toBe('OPENAI_API_KEY')
  })

  it('one edit away with the same first word beats one edit away with another', () => {
    expect(mistypedCredentialName('A_KEYS', new Set(['B_KEYS', 'A_KEY']))).toBe('A_KEY')
  })

  it('of two equally near names, the first known one', () => {
    expect(mistypedCredentialName('ACME_KEY', new Set(['ACME_KEYA', 'ACME_KEYB']))).toBe('ACME_KEYA')
  })

  it('the same words in another order are no dropped word', () => {
    expect(mistypedCredentialName('OPENAI_KEY_API', new Set(['OPENAI_API_KEY']))).toBeUndefined()
  })

  it('empty words (a doubled or leading "_") are ignored', () => {
    expect(mistypedCredentialName('OPENAI__KEY', new Set(['OPENAI_API_KEY']))).toBe('OPENAI_API_KEY')
    expect(mistypedCredentialName('_OPENAI_KEY', new Set(['OPENAI_API_KEY']))).toBe('OPENAI_API_KEY')
  })

  it('a near name with another first word counts only one edit away', () => {
    // Two edits from a known name: didYouMean would offer it, but that is too far for a typo.
    expect(mistypedCredentialName('XOPENAI_API_KEYX', new Set(['OPENAI_API_KEY']))).toBeUndefined()
    expect(mistypedCredentialName('XOPENAI_API_KEY', new Set(['OPENAI_API_KEY']))).toBe('OPENAI_API_KEY')
    expect(mistypedCredentialName('UNRELATED', new Set(['OPENAI_API_KEY']))).toBeUndefined()
  })
})

describe('the provider over these layers', () => {
  async function boot(home: string, project: string, config: Partial<LocalCredentialsConfig> = {}) {
    const ctx = new Context()
    await ctx.plugin(LocalCredentials, { home, cwd: project, checkAtStart: false, ...config })
    const credentials = ctx.get('credentials')
    expect(credentials).toBeDefined()
    return credentials!
  }

  it('loads without projectEnvAllow or knownNames in its config', async () => {
    const home = dir()
    writeFileSync(join(home, '.env'), 'PLAIN_KEY=p\n')
    expect(await (await boot(home, dir())).get('PLAIN_KEY')).toBe('p')
  })

  it('describe() of a value that is not one line: the layer is malformed, the name not configured', async () => {
    const home = dir()
    writeFileSync(join(home, '.credentials.yaml'), 'A_KEY: [x]\n')
    chmodSync(join(home, '.credentials.yaml'), 0o600)
    const credentials = await boot(home, dir())
    const described = await credentials.describe('A_KEY')
    expect(described.configured).toBe(false)
    const layer = described.layers.find((l) => l.id === 'credentials-file')!
    expect(layer.status).toBe('malformed')
    expect(layer.problem).toMatch(/A_KEY: the value is a list/)
    // knownValues hands out strings only.
    for (const value of await credentials.knownValues()) expect(typeof value).toBe('string')
  })

  it('describe(): a home .env entry shadows the credentials file; an env copy of the project .env is the project', async () => {
    const home = dir()
    const project = dir()
    const name = `LAYERS_${process.pid}_API_KEY`
    writeFileSync(join(home, '.env'), `${name}=same\n`)
    writeFileSync(join(home, '.credentials.yaml'), `${name}: same\n`)
    chmodSync(join(home, '.credentials.yaml'), 0o600)
    const credentials = await boot(home, project, { projectEnvAllow: [name] })
    const fromHome = await credentials.describe(name)
    expect(fromHome.source?.id).toBe('home-env')
    expect(fromHome.shadowed.map((l) => l.id)).toEqual(['credentials-file'])
    writeFileSync(join(project, '.env'), `${name}=proj\n`)
    process.env[name] = 'proj'
    try {
      const fromProject = await credentials.describe(name)
      expect(fromProject.source?.id).toBe('project-env')
      expect(fromProject.shadowed.map((l) => l.id)).toEqual(['home-env', 'credentials-file'])
    } finally {
      delete process.env[name]
    }
  })

  it('set(): the refusals carry their details; a new home directory is made 0700', async () => {
    const home = join(dir(), 'new', 'home')
    const credentials = await boot(home, dir())
    const empty = await credentials.set('A_KEY', '').catch((e: CredentialError) => e)
    expect((empty as CredentialError).details).toEqual({ credential: 'A_KEY' })
    await credentials.set('A_KEY', 'a')
    expect(statSync(home).mode & 0o777).toBe(0o700)
    // A long value with spaces stays on its one line (YAML would fold it at 80 columns).
    const long = Array.from({ length: 30 }, (_, i) => `word${i}`).join(' ')
    await credentials.set('B_KEY', long)
    expect(readFileSync(join(home, '.credentials.yaml'), 'utf8')).toBe(`A_KEY: a\nB_KEY: ${long}\n`)
    await credentials.unset('B_KEY')
    expect(readFileSync(join(home, '.credentials.yaml'), 'utf8')).toBe('A_KEY: a\n')
    const path = join(home, '.credentials.yaml')
    chmodSync(path, 0o640)
    const insecure = (await credentials.set('A_KEY', 'b').catch((e: CredentialError) => e)) as CredentialError
    expect(insecure.code).toBe('INSECURE_FILE')
    expect(insecure.details).toEqual({ path, credential: 'A_KEY' })
    chmodSync(path, 0o600)
    writeFileSync(path, 'A_KEY: [open\n')
    const malformed = (await credentials.set('A_KEY', 'b').catch((e: CredentialError) => e)) as CredentialError
    expect(malformed.code).toBe('MALFORMED_FILE')
    expect(malformed.details).toEqual({ path, credential: 'A_KEY' })
    rmSync(path)
    symlinkSync(path, path)
    const loop = (await credentials.set('A_KEY', 'b').catch((e: CredentialError) => e)) as CredentialError
    expect(loop.message).toBe(`cannot read ${path} (ELOOP)`)
    expect(loop.details).toEqual({ path })
  })
})
