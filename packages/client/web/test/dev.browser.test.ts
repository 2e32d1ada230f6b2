// `pnpm dev:web` against the real `dsh web`: the app and the workspace packages' browser halves
// come from sources through Vite, method calls and streams are proxied to the host, and the
// page works (a prompt answered) with no console errors.
import { spawn, type ChildProcess } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import {
  hasChromium,
  launchBrowser,
  openPage,
  startWebApp,
  withArtifacts,
  type Browser,
  type WebApp,
} from '@dsh/web-testkit'
import { SHELL_ONLY_PATCH } from './shell-only.ts'

vi.setConfig({ testTimeout: 90_000, hookTimeout: 90_000 })

const DEV = fileURLToPath(new URL('../build/dev.mjs', import.meta.url))
let app: WebApp
let browser: Browser
let dev: ChildProcess | undefined
let devUrl: string
const cache = mkdtempSync(join(tmpdir(), 'dsh-dev-cache-'))

beforeAll(async () => {
  app = await startWebApp({ patch: SHELL_ONLY_PATCH, steps: [{ text: 'Answered through the dev server.' }] })
  dev = spawn(process.execPath, [DEV, '--port', '0'], {
    env: { ...process.env, DSH_WEB_URL: app.url, DSH_DEV_CACHE_DIR: cache },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let out = ''
  devUrl = await new Promise<string>((resolve, reject) => {
    dev!.stdout!.setEncoding('utf8').on('data', (d: string) => {
      out += d
      const hit = /Local:\s+(http:\/\/\S+?)\/?\s/.exec(out.replace(/\x1b\[[0-9;]*m/g, ''))
      if (hit && out.includes('proxying')) resolve(hit[1])
    })
    dev!.on('close', (code) => reject(new Error(`dev server exited (${code}): ${out}`)))
  })
  browser = await launchBrowser()
})

afterAll(async () => {
  await browser?.close()
  dev?.kill()
  await app?.close()
  rmSync(cache, { recursive: true, force: true })
})

describe.skipIf(!hasChromium())('pnpm dev:web', () => {
  it('serves the app from sources, proxies the host, and a prompt is answered', async () => {
    const { page, context, errors } = await openPage(browser, devUrl)
    await withArtifacts(page, 'dev-server', async () => {
      await page.waitForURL(/\/s\//)
      const fromSources = await page.evaluate(() =>
        performance.getEntriesByType('resource').some((r) => r.name.includes('/src/main.tsx')),
      )
      expect(fromSources).toBe(true)
      const box = page.locator('[data-composer="true"]')
      await box.fill('through vite')
      await box.press('Enter')
      await expect
        .poll(() => page.locator('[data-kind="assistant"] .body').allTextContents(), { timeout: 20_000 })
        .toEqual(['Answered through the dev server.'])
      expect(errors).toEqual([])
    })
    await context.close()
  })
})
