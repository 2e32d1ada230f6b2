// The text rule through the real `dsh -p` bin (no client marks references there): an `@path` that
// names a file of the workspace reaches the request as its content, while `@words` that name
// nothing stay text, with no "missing file" note in the request.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { runDsh } from '@dsh/cli-testkit'
import { startMockServer, type MockServer } from '@dsh/llm-mock-server'

let server: MockServer
let root: string
beforeAll(async () => {
  server = await startMockServer({ steps: [{ text: 'done' }] as never })
  root = mkdtempSync(join(tmpdir(), 'dsh-e2e-file-ref-'))
})
afterAll(async () => {
  await server?.close()
  rmSync(root, { recursive: true, force: true })
})

it('dsh -p: @notes.md becomes context, @nothing and @alice stay text', { timeout: 90_000 }, async () => {
  const home = join(root, 'home')
  const cwd = join(root, 'work')
  mkdirSync(home, { recursive: true })
  mkdirSync(cwd, { recursive: true })
  writeFileSync(join(cwd, 'notes.md'), 'the notes say 42\n')
  // The default composition has no file-reference row: the home patch adds this package's build.
  const row = fileURLToPath(new URL('../dist/index.js', import.meta.url))
  writeFileSync(
    join(home, 'cordis.patch.yml'),
    `- insert:\n    - id: file-reference\n      name: ${JSON.stringify(row)}\n`,
  )
  const env = { DSH_HOME: home, DEEPSEEK_BASE_URL: server.baseURL, DEEPSEEK_API_KEY: 'x' }
  const run = await runDsh(['-p', '@nothing here; ask @alice about @notes.md'], { cwd, env })
  expect(run.stderr).toBe('')
  expect(run.code).toBe(0)
  const body = JSON.stringify(server.requests.at(-1)?.body)
  expect(body).toContain('<file path=\\"notes.md\\">\\nthe notes say 42\\n</file>')
  expect(body).not.toContain('unavailable=')
  expect(body).not.toContain('no such file')
  // One context message, for the file only (the request carries every logged message).
  expect(body.match(/<file /g)).toHaveLength(1)
})
