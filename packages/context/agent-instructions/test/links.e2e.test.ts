// A cloned repository's instruction file that is a link to a file outside the project (the dsh
// credentials, an SSH key) is read by the harness, not the model, and would go to the model with
// the first request. Through the real `dsh --profile headless` and the scripted model server: such
// files are skipped with a warning, a link inside the project still loads.
import { mkdirSync, mkdtempSync, realpathSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterEach, expect, it } from 'vitest'
import { startMockServer, type MockServer } from '@dsh/llm-mock-server'
import { runDsh } from '@dsh/cli-testkit'

const plugin = fileURLToPath(new URL('../src/index.ts', import.meta.url))
let mock: MockServer | undefined
afterEach(async () => {
  await mock?.close()
  mock = undefined
})

const KEY = 'sk-planted-instructions-not-a-real-key'
const SSH = 'PLANTED-PRIVATE-KEY-BODY'

async function run(mode: string) {
  // Reading a file in lib/ makes the plugin discover lib/CLAUDE.md (a link to the SSH key).
  mock = await startMockServer({
    steps: [
      { toolCalls: [{ id: 'r1', name: 'read', arguments: { file_path: '../lib/x.txt' } }] },
      { text: 'Understood.' },
    ] as never,
  })
  const root = realpathSync(mkdtempSync(join(tmpdir(), 'dsh-instructions-links-')))
  const home = join(root, 'home')
  const repo = join(root, 'repo')
  const ssh = join(root, 'user', '.ssh')
  for (const dir of [home, ssh, join(repo, '.git'), join(repo, 'app'), join(repo, 'lib'), join(repo, 'docs')])
    mkdirSync(dir, { recursive: true })
  writeFileSync(join(home, '.credentials.yaml'), `MY_SERVICE_TOKEN: ${KEY}\n`, { mode: 0o600 })
  writeFileSync(join(ssh, 'id_rsa'), `-----BEGIN KEY-----\n${SSH}\n`)
  writeFileSync(join(repo, 'docs', 'rules.md'), 'INSIDE: linked rules from docs')
  symlinkSync(join(home, '.credentials.yaml'), join(repo, 'AGENTS.md'))
  symlinkSync(join(ssh, 'id_rsa'), join(repo, 'lib', 'CLAUDE.md'))
  symlinkSync('../docs/rules.md', join(repo, 'app', 'AGENTS.md'))
  writeFileSync(join(repo, 'lib', 'x.txt'), 'library\n')
  const patch = join(root, 'instructions.patch.yml')
  writeFileSync(
    patch,
    [
      '- id: agent-instructions',
      `  name: ${JSON.stringify(plugin)}`,
      '- id: permission-presets',
      '  config:',
      '    default: e2e',
      '    env: ""',
      '    presets:',
      `      e2e: { mode: ${mode}, approval: never, description: "e2e" }`,
      '',
    ].join('\n'),
  )
  // The credentials file lives in the dsh home; the key itself comes from the environment.
  const result = await runDsh(['--profile', 'headless', '--patch', patch, 'hello'], {
    cwd: join(repo, 'app'),
    env: { DSH_HOME: home, DEEPSEEK_BASE_URL: mock.baseURL, DEEPSEEK_API_KEY: 'sk-test-env-key' },
  })
  return { result, repo, seen: JSON.stringify(mock.requests.map((r) => r.body)) }
}

for (const mode of ['workspace-write', 'danger-full-access']) {
  it(`${mode}: an instruction file linked outside the project is not sent; one linked inside is`, {
    timeout: 60_000,
  }, async () => {
    const { result, seen } = await run(mode)
    expect(result, result.stderr).toMatchObject({ code: 0, stdout: 'Understood.\n' })
    expect(mock!.requests).toHaveLength(2)
    expect(seen).not.toContain(KEY)
    expect(seen).not.toContain(SSH)
    expect(seen).toContain('INSIDE: linked rules from docs')
    expect(seen).toContain('library')
  })
}
