// The real `dsh web` bin: a credential set over HTTP lands in $DSH_HOME/.credentials.yaml and never
// appears in a response or in the process output; settings.update writes settings.yaml.
import { spawn } from 'node:child_process'
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { DSH_BIN } from '@dsh/cli-testkit'

const root = mkdtempSync(join(tmpdir(), 'dsh-api-settings-e2e-'))
afterAll(() => rmSync(root, { recursive: true, force: true }))
const SECRET = 'sk-e2e-0a1b2c3d4e5f-must-stay-on-the-host'

describe('dsh web settings and credentials methods (real bin)', () => {
  it('credentials.set stores the key without echoing it anywhere; describe says where; settings.update writes settings.yaml', async () => {
    const home = join(root, 'home')
    const dshHome = join(home, '.dsh')
    const cwd = join(root, 'project')
    mkdirSync(cwd, { recursive: true })
    const child = spawn(process.execPath, [DSH_BIN, 'web', '--no-open', '--port', '0'], {
      cwd,
      env: { PATH: process.env.PATH!, HOME: home, DSH_HOME: dshHome },
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    let stdout = ''
    let stderr = ''
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d))
    const exited = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)))
    const timer = setTimeout(() => child.kill('SIGKILL'), 60_000)
    const responses: string[] = []
    try {
      const url = await new Promise<string>((resolve, reject) => {
        child.stdout.setEncoding('utf8').on('data', (d: string) => {
          stdout += d
          const hit = /http:\/\/127\.0\.0\.1:\d+/.exec(stdout)
          if (hit) resolve(hit[0])
        })
        void exited.then(() => reject(new Error(`dsh web exited before printing a URL; stderr: ${stderr}`)))
      })
      const call = async (method: string, params: unknown) => {
        const res = await fetch(`${url}/api/${method}`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', origin: url },
          body: JSON.stringify(params),
        })
        const text = await res.text()
        responses.push(text)
        return { status: res.status, body: JSON.parse(text) }
      }

      const before = await call('credentials.describe', {})
      expect(before.body.result.credentials).toEqual([
        expect.objectContaining({ name: 'DEEPSEEK_API_KEY', configured: false }),
      ])

      const set = await call('credentials.set', { name: 'DEEPSEEK_API_KEY', value: SECRET })
      expect(set.status).toBe(200)
      expect(set.body.result.credential).toMatchObject({ configured: true, source: 'credentials-file' })
      expect(readFileSync(join(dshHome, '.credentials.yaml'), 'utf8')).toContain(SECRET)

      const after = await call('credentials.describe', { names: ['DEEPSEEK_API_KEY'] })
      expect(after.body.result.credentials[0]).toMatchObject({ configured: true, source: 'credentials-file' })

      const other = await call('credentials.set', { name: 'HOME', value: SECRET })
      expect(other.status).toBe(404)

      const model = await call('settings.update', { namespace: 'model', patch: { reasoningEffort: 'high' } })
      expect(model.status).toBe(200)
      expect(readFileSync(join(dshHome, 'settings.yaml'), 'utf8')).toMatch(/reasoningEffort: high/)
      const badModel = await call('settings.update', { namespace: 'model', patch: { reasoningEffort: 'extreme' } })
      expect(badModel.body.error).toMatchObject({ code: 'INVALID_SETTINGS', field: 'model.reasoningEffort' })

      const unset = await call('credentials.unset', { name: 'DEEPSEEK_API_KEY' })
      expect(unset.body.result.credential.configured).toBe(false)
      expect(readFileSync(join(dshHome, '.credentials.yaml'), 'utf8')).not.toContain(SECRET)
    } finally {
      child.kill('SIGTERM')
      const code = await exited
      clearTimeout(timer)
      expect(code, stderr).toBe(0)
    }
    for (const text of responses) expect(text).not.toContain(SECRET)
    expect(stdout + stderr).not.toContain(SECRET)
  }, 60_000)
})
