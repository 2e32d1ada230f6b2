// The host link in the real page: `dsh web` with the mock model, Chromium. The page's import map
// gives `@dsh/client-connection` and `@dsh/client-runtime` (which re-exports it) one module
// instance, so a half on either name gets the classes the page's root context runs.
import { describe, expect, it, vi } from 'vitest'
import { hasChromium, useWebApp } from '@dsh/web-testkit'

vi.setConfig({ testTimeout: 60_000, hookTimeout: 60_000 })

describe.skipIf(!hasChromium())('@dsh/client-connection in dsh web', () => {
  // The worker's shared host (no model turn here).
  const app = useWebApp({ steps: [] })
  it('is a shared name of the page, binding for binding what the runtime exports', async () => {
    const { page, context, errors } = await app.openPage()
    try {
      const seen = await page.evaluate(async () => {
        // The page's own modules through its import map (eval keeps vitest from rewriting the imports).
        // biome-ignore lint/security/noGlobalEval: constant strings run in the test page; written as code, vitest would rewrite the imports to its own module graph
        const load = (0, eval)('(u) => import(u)') as (u: string) => Promise<Record<string, unknown>>
        const link = await load('@dsh/client-connection')
        const runtime = await load('@dsh/client-runtime')
        const names = Object.keys(link)
        return {
          names,
          missing: names.filter((n) => !(n in runtime)),
          different: names.filter((n) => runtime[n] !== link[n]),
        }
      })
      expect(seen.names).toEqual(expect.arrayContaining(['Connection', 'SessionFeed', 'Remote', 'Store', 'readSse']))
      expect(seen).toMatchObject({ missing: [], different: [] })
      expect(errors).toEqual([])
    } finally {
      await context.close()
    }
  })
})
