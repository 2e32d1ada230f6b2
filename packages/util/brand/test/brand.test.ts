import { describe, expect, it } from 'vitest'
import { readFileSync } from 'node:fs'
import { brand, PRODUCT_NAME, userAgent, version, type Brand } from '../src/index.ts'

const cliPkg = JSON.parse(readFileSync(new URL('../../../boot/cli/package.json', import.meta.url), 'utf8'))

describe('@dsh/brand', () => {
  it('reads the version from the cli package', () => {
    expect(version).toBe(cliPkg.version)
    expect(PRODUCT_NAME).toBe('dsh')
  })

  it('builds a User-Agent naming product, version, node major and platform', () => {
    const major = process.versions.node.split('.')[0]
    expect(userAgent()).toBe(`dsh/${version} (node v${major}; ${process.platform})`)
    expect(userAgent('llm-deepseek')).toBe(`${userAgent()} llm-deepseek`)
  })

  it('brands values without changing them at runtime', () => {
    type SessionId = Brand<string, 'SessionId'>
    const id: SessionId = brand<'SessionId'>('s-1')
    expect(id).toBe('s-1')
    // @ts-expect-error a bare string is not a SessionId
    const bad: SessionId = 's-2'
    expect(bad).toBe('s-2')
  })
})
