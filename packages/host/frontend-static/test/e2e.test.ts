// The real `dsh web` bin: the placeholder page, and a third-party plugin's browser half added by a
// patch file (no rebuild of anything) served at /plugins/<package>/ and listed by plugins.list.
import { spawn } from 'node:child_process'
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { DSH_BIN } from '@dsh/cli-testkit'

const root = mkdtempSync(join(tmpdir(), 'dsh-frontend-static-e2e-'))
afterAll(() => rmSync(root, { recursive: true, force: true }))

describe('dsh web serves the client directory and plugin browser halves (real bin)', () => {
  it("the app at /, a patch-mounted package's ./client files at /plugins/@acme/dsh-ui/, the row in plugins.list", async () => {
    const home = join(root, 'home')
    const cwd = join(root, 'project')
    const pkg = join(cwd, 'acme-ui')
    mkdirSync(join(pkg, 'client'), { recursive: true })
    writeFileSync(
      join(pkg, 'package.json'),
      JSON.stringify({
        name: '@acme/dsh-ui',
        type: 'module',
        exports: { '.': './index.js', './client': './client/main.js' },
      }),
    )
    writeFileSync(join(pkg, 'index.js'), `export const name = 'acme-ui'\nexport function apply() {}\n`)
    writeFileSync(join(pkg, 'client', 'main.js'), `export default function activate() { return 'acme' }\n`)
    writeFileSync(join(pkg, 'client', 'view-Ab12Cd34.js'), `export const view = 1\n`)
    writeFileSync(join(cwd, 'ui.patch.yml'), `- insert:\n    - id: acme-ui\n      name: ./acme-ui/index.js\n`)

    const child = spawn(process.execPath, [DSH_BIN, 'web', '--no-open', '--port', '0', '--patch', 'ui.patch.yml'], {
      cwd,
      env: { PATH: process.env.PATH!, HOME: home, DSH_HOME: join(home, '.dsh') },
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    let stdout = ''
    let stderr = ''
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d))
    const exited = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)))
    const timer = setTimeout(() => child.kill('SIGKILL'), 60_000)
    try {
      const url = await new Promise<string>((resolve, reject) => {
        child.stdout.setEncoding('utf8').on('data', (d: string) => {
          stdout += d
          const hit = /http:\/\/127\.0\.0\.1:\d+/.exec(stdout)
          if (hit) resolve(hit[0])
        })
        void exited.then(() => reject(new Error(`dsh web exited before printing a URL; stderr: ${stderr}`)))
      })

      const page = await fetch(url + '/')
      expect(page.status).toBe(200)
      expect(page.headers.get('cache-control')).toBe('no-cache')
      const html = await page.text()
      // The built client (or, when it is not built, the placeholder) with the boot manifest naming the half.
      if (html.includes('id="dsh-boot"'))
        expect(html).toContain('{"package":"@acme/dsh-ui","url":"/plugins/@acme/dsh-ui/main.js"}')
      else expect(html).toContain('client is not built')
      // A client-side route gets the same page.
      expect((await fetch(url + '/sessions/123')).status).toBe(200)

      const main = await fetch(url + '/plugins/@acme/dsh-ui/main.js')
      expect(main.status).toBe(200)
      expect(main.headers.get('content-type')).toBe('text/javascript; charset=utf-8')
      expect(await main.text()).toContain('activate')
      const view = await fetch(url + '/plugins/@acme/dsh-ui/view-Ab12Cd34.js')
      expect(view.headers.get('cache-control')).toBe('public, max-age=31536000, immutable')
      const traversal = await fetch(url + '/plugins/@acme/dsh-ui/..%2fpackage.json')
      expect(traversal.status).toBe(403)

      const list = await fetch(url + '/api/plugins.list', {
        method: 'POST',
        headers: { 'content-type': 'application/json', origin: url },
        body: '{}',
      })
      expect(list.status).toBe(200)
      const rows = ((await list.json()) as { result: { plugins: { id: string; package?: string; state: string }[] } })
        .result.plugins
      expect(rows).toContainEqual(
        expect.objectContaining({ id: 'acme-ui', package: '@acme/dsh-ui', enabled: true, state: 'active' }),
      )
      expect(rows).toContainEqual(
        expect.objectContaining({ id: 'frontend-static', package: '@dsh/frontend-static', state: 'active' }),
      )
    } finally {
      child.kill('SIGTERM')
      const code = await exited
      clearTimeout(timer)
      expect(code, stderr).toBe(0)
    }
  }, 60_000)
})
