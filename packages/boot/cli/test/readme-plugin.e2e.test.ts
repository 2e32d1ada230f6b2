// The root README's "Writing a plugin" example, taken verbatim from README.md (between its
// `readme:plugin-*` markers), saved into a fresh profile directory and run by the real `dsh`
// against the scripted model: the model calls `greet` and sees the plugin's answer.
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, expect, it } from 'vitest'
import { startMockServer, type MockServer } from '@dsh/llm-mock-server'
import { runDsh } from '@dsh/cli-testkit'

const readme = readFileSync(new URL('../../../../README.md', import.meta.url), 'utf8')
function block(tag: string): string {
  const m = new RegExp(`<!-- readme:${tag} -->\\n\`\`\`\\w*\\n([\\s\\S]*?)\\n\`\`\``).exec(readme)
  if (!m) throw new Error(`README.md has no readme:${tag} block`)
  return m[1] + '\n'
}

let mock: MockServer | undefined
afterAll(async () => mock?.close())

it('the README plugin example works as written, from a profile directory with no node_modules', async () => {
  mock = await startMockServer({
    steps: [
      { toolCalls: [{ id: 'call_1', name: 'greet', arguments: { who: 'Ada' } }] },
      { expect: { lastRole: 'tool', lastContains: 'hi, Ada' }, text: 'Greeted.' },
    ] as never,
  })
  const root = mkdtempSync(join(tmpdir(), 'dsh-readme-plugin-'))
  const home = join(root, 'home')
  const profileDir = join(home, 'profiles', 'headless')
  const project = join(root, 'project')
  mkdirSync(project, { recursive: true })
  const env = {
    DSH_HOME: home,
    GREETING: 'hi',
    DEEPSEEK_BASE_URL: mock.baseURL,
    DEEPSEEK_API_KEY: 'sk-test-not-a-real-key',
  }
  // First run creates the profile from its template; then the user adds the README's two files.
  const dump = await runDsh(['--profile', 'headless', '--dump-config'], { cwd: project, env })
  expect(dump.code, dump.stderr).toBe(0)
  writeFileSync(join(profileDir, 'hello.ts'), block('plugin-ts'))
  writeFileSync(join(profileDir, 'cordis.patch.yml'), block('plugin-yml'))

  const run = await runDsh(['--profile', 'headless', 'greet Ada'], { cwd: project, env })
  expect(run, run.stderr).toMatchObject({ code: 0, stdout: 'Greeted.\n' })
  const tools = (mock.requests[0].body as { tools: { function: { name: string } }[] }).tools.map((t) => t.function.name)
  expect(tools).toContain('greet')
  expect(mock.requests).toHaveLength(2)
}, 90_000)
