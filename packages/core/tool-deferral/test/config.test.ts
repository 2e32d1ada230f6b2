// Which tools the configuration defers: the per-tool `defer` map, else the tool's own flag, else
// `unflagged` (with `core` kept in full).
import { describe, expect, it } from 'vitest'
import { DEFAULT_CORE, deferrable, nearMatches, type ToolDeferralConfig } from '@dsh/tool-deferral'

const config = (extra: Partial<ToolDeferralConfig> = {}): ToolDeferralConfig => ({
  enabled: true,
  defer: {},
  unflagged: 'full',
  core: DEFAULT_CORE,
  ...extra,
})

describe('deferrable', () => {
  it('follows the defer map, then the tool flag, then unflagged', () => {
    expect(deferrable({ name: 'lsp', defer: true }, config())).toBe(true)
    expect(deferrable({ name: 'mcp__x__y' }, config())).toBe(false)
    expect(deferrable({ name: 'mcp__x__y' }, config({ unflagged: 'deferred' }))).toBe(true)
    expect(deferrable({ name: 'bash' }, config({ unflagged: 'deferred' }))).toBe(false)
    expect(deferrable({ name: 'lsp', defer: true }, config({ defer: { lsp: false } }))).toBe(false)
    expect(deferrable({ name: 'bash' }, config({ defer: { bash: true } }))).toBe(true)
    expect(deferrable({ name: 'lsp', defer: true }, config({ defer: { lsp: 'auto' } }))).toBe(true)
    expect(deferrable({ name: 'report', defer: false }, config({ unflagged: 'deferred' }))).toBe(false)
  })

  it('near matches: small edit distance or containment, closest first', () => {
    const names = ['job_list', 'job_kill', 'job_output', 'web_fetch', 'web_search']
    expect(nearMatches('job_lst', names)).toEqual(['job_list'])
    expect(nearMatches('web_serch', names)).toEqual(['web_search', 'web_fetch'])
    expect(nearMatches('fetch', names)).toEqual(['web_fetch'])
    expect(nearMatches('zzz', names)).toEqual([])
  })
})
