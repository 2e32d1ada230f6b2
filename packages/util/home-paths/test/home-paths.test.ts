import { describe, expect, it } from 'vitest'
import { join } from 'node:path'
import { Context } from 'cordis'
import HomePaths, { homeLayout, resolveDshHome } from '../src/index.ts'

describe('resolveDshHome', () => {
  it('defaults to ~/.dsh', () => {
    expect(resolveDshHome({}, '/home/u')).toBe('/home/u/.dsh')
    expect(resolveDshHome({ DSH_HOME: '  ' }, '/home/u')).toBe('/home/u/.dsh')
  })
  it('honours $DSH_HOME, expanding ~ and making relative paths absolute', () => {
    expect(resolveDshHome({ DSH_HOME: '/srv/dsh' }, '/home/u')).toBe('/srv/dsh')
    expect(resolveDshHome({ DSH_HOME: '~/alt' }, '/home/u')).toBe('/home/u/alt')
    expect(resolveDshHome({ DSH_HOME: 'rel' }, '/home/u')).toBe(join(process.cwd(), 'rel'))
  })
})

describe('homeLayout', () => {
  it('names every well-known file', () => {
    const l = homeLayout('/h')
    expect(l).toMatchObject({
      profiles: '/h/profiles',
      sessions: '/h/sessions',
      settings: '/h/settings.yaml',
      credentials: '/h/.credentials.yaml',
      env: '/h/.env',
      patch: '/h/cordis.patch.yml',
      attachments: '/h/attachments',
      skills: '/h/skills',
    })
    expect(l.profile('web')).toBe('/h/profiles/web')
  })
  it('rejects profile names that could escape profiles/', () => {
    expect(() => homeLayout('/h').profile('../x')).toThrow(/invalid profile name/)
    expect(() => homeLayout('/h').profile('')).toThrow(/invalid profile name/)
  })
})

describe('HomePaths service', () => {
  it('provides ctx.homePaths and withdraws it on dispose', async () => {
    const ctx = new Context()
    const fiber = ctx.plugin(HomePaths, { home: '/tmp/dsh-home-test' })
    await fiber
    expect(ctx.get('homePaths')?.sessions).toBe('/tmp/dsh-home-test/sessions')
    await fiber.dispose()
    expect(ctx.get('homePaths')).toBeUndefined()
  })
})
