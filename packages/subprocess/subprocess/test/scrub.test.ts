import { describe, expect, it } from 'vitest'
import {
  compilePattern,
  createScrubber,
  DEFAULT_SCRUB_DENY,
  DEFAULT_SCRUB_POLICY,
  scrubEnvironment,
} from '../src/index.ts'

// One variable per default pattern that no other default pattern matches: deleting any pattern
// from the list lets its witness through, so the table below fails.
const WITNESSES: Record<string, string> = {
  '*API_KEY*': 'DEEPSEEK_API_KEY',
  '*APIKEY*': 'GOOGLE_APIKEY',
  '*_TOKEN': 'GITHUB_TOKEN',
  '*_TOKEN_*': 'SLACK_TOKEN_V2',
  TOKEN: 'TOKEN',
  '*SECRET*': 'CLIENT_SECRET',
  '*PASSWORD*': 'DB_PASSWORD',
  '*PASSWD*': 'PGPASSWD',
  '*_CREDENTIALS': 'GOOGLE_APPLICATION_CREDENTIALS',
  '*_PRIVATE_KEY': 'SSH_PRIVATE_KEY',
  '*_ACCESS_KEY': 'MINIO_ACCESS_KEY',
  '*_ACCESS_KEY_ID': 'ALIYUN_ACCESS_KEY_ID',
  '*_SESSION_KEY': 'CLAUDE_SESSION_KEY',
  'AWS_*': 'AWS_REGION',
}

/** Ordinary variables a child needs; none may be scrubbed by default. */
const ORDINARY = [
  'PATH',
  'HOME',
  'LANG',
  'TERM',
  'USER',
  'SHELL',
  'PWD',
  'EDITOR',
  'TOKENIZERS_PARALLELISM',
  'KEYBOARD_LAYOUT',
  'NODE_OPTIONS',
  'DSH_SESSION_ID',
]

describe('the default credential scrub list', () => {
  const scrubbed = createScrubber(DEFAULT_SCRUB_POLICY)

  it.each(Object.entries(WITNESSES))('%s removes %s, and only that pattern does', (pattern, name) => {
    expect(scrubbed(name)).toBe(true)
    expect(scrubbed(name.toLowerCase())).toBe(true)
    expect(DEFAULT_SCRUB_DENY.filter((p) => compilePattern(p).test(name))).toEqual([pattern])
  })

  it('has a witness for every pattern (a new pattern needs one here)', () => {
    expect([...DEFAULT_SCRUB_DENY].sort()).toEqual(Object.keys(WITNESSES).sort())
    expect(DEFAULT_SCRUB_POLICY.allow).toEqual([])
  })

  it('keeps ordinary variables', () => {
    for (const name of ORDINARY) expect(scrubbed(name), name).toBe(false)
  })

  it('removes every witness from an inherited environment and reports the names', () => {
    const env: Record<string, string | undefined> = { PATH: '/bin', HOME: '/h', GONE: undefined }
    for (const name of Object.values(WITNESSES)) env[name] = `value-of-${name}`
    const result = scrubEnvironment(env, scrubbed)
    expect(result.env).toEqual({ PATH: '/bin', HOME: '/h' })
    expect(result.removed.sort()).toEqual(Object.values(WITNESSES).sort())
  })

  it('lets an allow pattern keep a variable the deny list matches', () => {
    const keep = createScrubber({ deny: [...DEFAULT_SCRUB_DENY], allow: ['AWS_REGION'] })
    expect(keep('AWS_REGION')).toBe(false)
    expect(keep('AWS_SECRET_ACCESS_KEY')).toBe(true)
  })
})
