// The shipped base rows through the real `dsh -p`: off by default (nothing reaches the receiver),
// on with DSH_TELEMETRY_ENABLED=1 + DSH_TELEMETRY_ENDPOINT, flushed before the one-shot exits.
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { mkdirSync, mkdtempSync, realpathSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { runDsh } from '@dsh/cli-testkit'
import { startMockServer, type MockServer } from '@dsh/llm-mock-server'

vi.setConfig({ testTimeout: 90_000 })

let mock: MockServer
let server: Server
let url: string
let root: string
const bodies: string[] = []

beforeAll(async () => {
  root = realpathSync(mkdtempSync(join(tmpdir(), 'dsh-otel-e2e-')))
  mkdirSync(join(root, 'work'))
  mock = await startMockServer({ steps: [{ text: 'first answer words' }, { text: 'second answer words' }] as never })
  server = createServer((req, res) => {
    let text = ''
    req
      .setEncoding('utf8')
      .on('data', (d: string) => (text += d))
      .on('end', () => {
        bodies.push(text)
        res.writeHead(200, { 'content-type': 'application/json' }).end('{}')
      })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/logs`
})

afterAll(async () => {
  await mock?.close()
  await new Promise<void>((resolve) => server.close(() => resolve()))
  rmSync(root, { recursive: true, force: true })
})

const env = (extra: Record<string, string> = {}) => ({
  DSH_HOME: join(root, 'home'),
  HOME: join(root, 'home'),
  DEEPSEEK_BASE_URL: mock.baseURL,
  DEEPSEEK_API_KEY: 'sk-test-not-a-real-key',
  ...extra,
})

describe('dsh -p with the telemetry rows of the base bundle', () => {
  it('sends nothing by default; with DSH_TELEMETRY_ENABLED=1 the turn and its model call arrive before exit, without prompt text', async () => {
    const off = await runDsh(['-p', 'quiet prompt text'], {
      cwd: join(root, 'work'),
      env: env({ DSH_TELEMETRY_ENDPOINT: url }),
    })
    expect(off.code, off.stderr).toBe(0)
    expect(bodies).toEqual([])
    const on = await runDsh(['-p', 'telemetry prompt text'], {
      cwd: join(root, 'work'),
      env: env({ DSH_TELEMETRY_ENABLED: '1', DSH_TELEMETRY_ENDPOINT: url }),
    })
    expect(on.code, on.stderr).toBe(0)
    const raw = bodies.join('\n')
    expect(raw).toContain('dsh.model_call')
    expect(raw).toContain('dsh.turn')
    expect(raw).toContain('"service.name"')
    expect(raw).not.toContain('telemetry prompt text')
    expect(raw).not.toContain('second answer words')
  })
})
