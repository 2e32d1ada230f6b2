import { describe, expect, it } from 'vitest'
import { parseEnv } from 'node:util'
import { filterProjectEnv, findEnvSyntaxError, PROJECT_ENV_CREDENTIALS, projectEnvAllowlist } from '../src/index.ts'

describe('the project .env allowlist', () => {
  it('holds provider keys only: no dsh setting, no endpoint', () => {
    expect(PROJECT_ENV_CREDENTIALS).toContain('DEEPSEEK_API_KEY')
    expect(PROJECT_ENV_CREDENTIALS).toContain('OPENAI_API_KEY')
    for (const name of PROJECT_ENV_CREDENTIALS) {
      expect(name).not.toMatch(/^DSH_|URL|HOST|ENDPOINT|PROXY|MODE/)
    }
  })

  it('adds credential-shaped names from a list or DSH_PROJECT_ENV_ALLOW text', () => {
    const allow = projectEnvAllowlist('MY_API_KEY, INTERNAL_TOKEN\tDB_PASSWORD')
    expect([...allow].filter((n) => !PROJECT_ENV_CREDENTIALS.includes(n))).toEqual([
      'MY_API_KEY',
      'INTERNAL_TOKEN',
      'DB_PASSWORD',
    ])
    expect(projectEnvAllowlist(['VAULT_SECRET'], 'config.projectEnvAllow').has('VAULT_SECRET')).toBe(true)
    expect(projectEnvAllowlist(undefined).size).toBe(new Set(PROJECT_ENV_CREDENTIALS).size)
  })

  it('refuses settings, endpoints and dsh variables by name and source', () => {
    expect(() => projectEnvAllowlist('OK_KEY DEEPSEEK_BASE_URL')).toThrow(
      'DSH_PROJECT_ENV_ALLOW: "DEEPSEEK_BASE_URL" is not a credential name',
    )
    expect(() => projectEnvAllowlist(['NODE_OPTIONS'], 'config.projectEnvAllow')).toThrow(
      'config.projectEnvAllow: "NODE_OPTIONS" is not a credential name',
    )
    expect(() => projectEnvAllowlist('DSH_PERMISSION_MODE')).toThrow('is a dsh setting')
    expect(() => projectEnvAllowlist('DSH_API_KEY')).toThrow('is a dsh setting')
  })

  it('splits values into kept and ignored names', () => {
    const { kept, ignored } = filterProjectEnv(
      { Z: '1', DEEPSEEK_API_KEY: 'k', A: '2' },
      projectEnvAllowlist(undefined),
    )
    expect(kept).toEqual({ DEEPSEEK_API_KEY: 'k' })
    expect(ignored).toEqual(['A', 'Z'])
  })
})

describe('findEnvSyntaxError', () => {
  it('accepts what Node parses cleanly: comments, blanks, export, quotes, multi-line quoted values', () => {
    const text = '# c\n\nA=1\nexport B = two\nC="x # y"\nD=\'multi\nline\'\nE=`t`\nF=\n  G=  spaced  \n'
    expect(findEnvSyntaxError(text)).toBeUndefined()
    expect(parseEnv(text)).toMatchObject({ A: '1', B: 'two', D: 'multi\nline', G: 'spaced' })
  })

  it('names the first line that is not NAME=value, and an unclosed quote', () => {
    expect(findEnvSyntaxError('A=1\n!!!\nB=2\n')).toEqual({ line: 2, problem: 'expected NAME=value (or a # comment)' })
    expect(findEnvSyntaxError('KEY: value\n')).toEqual({ line: 1, problem: 'expected NAME=value (or a # comment)' })
    expect(findEnvSyntaxError('A=1\r\n1X=2\r\n')).toMatchObject({ line: 2 })
    expect(findEnvSyntaxError('A="never\nB=2\n')).toEqual({ line: 1, problem: 'the "-quoted value is never closed' })
    expect(findEnvSyntaxError("A='a\nb'\nC\n")).toMatchObject({ line: 3 })
  })
})
