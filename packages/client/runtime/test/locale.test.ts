import { describe, expect, it } from 'vitest'
import { Context } from 'cordis'
import { Locale, pickLang } from '../src/index.ts'

describe('ctx.locale', () => {
  it('picks the first shipped language by primary subtag, English otherwise', () => {
    expect(pickLang(['fr-FR', 'zh-TW', 'en'])).toBe('zh')
    expect(pickLang(['EN-gb'])).toBe('en')
    expect(pickLang(['fr', 'de'])).toBe('en')
    expect(pickLang(undefined)).toBe('en')
  })

  it('looks up the current language, then English, then names the key; fills placeholders; unloading removes a dictionary', async () => {
    const ctx = new Context()
    await ctx.plugin(Locale, { lang: 'zh' })
    const fiber = ctx.plugin({
      name: 'ui-x',
      inject: ['locale'],
      apply(c: Context) {
        c.locale.register('x', { en: { hi: 'Hello {name}', only: 'English only' }, zh: { hi: '你好 {name}' } })
      },
    })
    await fiber
    expect(ctx.locale.t('x', 'hi', { name: 'dsh' })).toBe('你好 dsh')
    expect(ctx.locale.t('x', 'only')).toBe('English only')
    expect(ctx.locale.t('x', 'missing')).toBe('x.missing')
    expect(ctx.locale.t('x', 'hi', {}, 'en')).toBe('Hello {name}')
    expect(() => ctx.locale.set('fr' as never)).toThrow(/unknown language "fr"/)
    await fiber.dispose()
    expect(ctx.locale.t('x', 'hi')).toBe('x.hi')
  })
})
