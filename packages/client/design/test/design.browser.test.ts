// The design system in the real page: `dsh web` with the mock model, Chromium. The page's import
// map gives `@dsh/client-design` and its older name `@dsh/client-runtime/ui` one module (a half
// on either name gets the same components), and the stylesheet is installed once.
import { describe, expect, it, vi } from 'vitest'
import { hasChromium, useWebApp } from '@dsh/web-testkit'

vi.setConfig({ testTimeout: 60_000, hookTimeout: 60_000 })

describe.skipIf(!hasChromium())('@dsh/client-design in dsh web', () => {
  const web = useWebApp({ steps: [] })
  it('both names resolve to one module in the page, and the stylesheet is there once', async () => {
    const { page, context, errors } = await web.openPage()
    try {
      const seen = await page.evaluate(async () => {
        // The page's own modules through its import map (eval keeps vitest from rewriting the imports).
        // biome-ignore lint/security/noGlobalEval: constant strings run in the test page; written as code, vitest would rewrite the imports to its own module graph
        const load = (0, eval)('(u) => import(u)') as (u: string) => Promise<Record<string, unknown>>
        const design = await load('@dsh/client-design')
        const old = await load('@dsh/client-runtime/ui')
        const names = Object.keys(design)
        return {
          names: names.length,
          sameNames: JSON.stringify(Object.keys(old).sort()) === JSON.stringify([...names].sort()),
          sameBindings: names.every((n) => old[n] === design[n]),
          sheets: document.querySelectorAll('style#dsh-design').length,
          bg: getComputedStyle(document.documentElement).getPropertyValue('--dsh-color-bg').trim(),
        }
      })
      expect(seen.names).toBeGreaterThan(20)
      expect(seen).toMatchObject({ sameNames: true, sameBindings: true, sheets: 1 })
      expect(seen.bg).toMatch(/^#[0-9a-f]{6}$/i)
      expect(errors).toEqual([])
    } finally {
      await context.close()
    }
  })
})
