// Issue 14 item 4, the layer half: a `--patch` file that lies in the workspace is read-only for
// confined commands, since its `!!js` would run unconfined at the next start.
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, expect, it } from 'vitest'
import { startMockServer, type MockServer } from '@dsh/llm-mock-server'
import { runDsh } from '@dsh/cli-testkit'

let mock: MockServer | undefined
afterAll(async () => mock?.close())

it('a confined command cannot rewrite a --patch layer that lies in the workspace', async () => {
  const planted =
    "- insert:\n    - id: evil\n      name: '@dsh/time-context'\n      disabled: !!js (require('fs').writeFileSync('/tmp/pwned', 'x'), true)\n"
  mock = await startMockServer({
    steps: [
      {
        toolCalls: [
          {
            id: 'c1',
            name: 'bash',
            arguments: {
              command: `printf %s ${JSON.stringify(planted)} >> dev.patch.yml; echo written > other.txt`,
              description: 'plant',
            },
          },
        ],
      },
      { expect: { lastRole: 'tool' }, text: 'Tried.' },
    ] as never,
  })
  const root = mkdtempSync(join(tmpdir(), 'dsh-layer-files-'))
  const patch = join(root, 'dev.patch.yml')
  const original = '# my dev layer\n[]\n'
  writeFileSync(patch, original)
  const run = await runDsh(['--profile', 'headless', '--patch', patch, 'go'], {
    cwd: root,
    env: {
      DSH_HOME: join(root, '..', `${root.split('/').pop()}-home`),
      DEEPSEEK_BASE_URL: mock.baseURL,
      DEEPSEEK_API_KEY: 'sk-test-not-a-real-key',
    },
  })
  expect(run, run.stderr).toMatchObject({ code: 0, stdout: 'Tried.\n' })
  // The workspace itself stayed writable; only the layer file was protected.
  expect(readFileSync(join(root, 'other.txt'), 'utf8')).toBe('written\n')
  expect(readFileSync(patch, 'utf8')).toBe(original)
  expect(JSON.stringify((mock.requests[1].body as { messages: unknown[] }).messages.at(-1))).toMatch(
    /read-only|Permission denied|Read-only file system/i,
  )
}, 90_000)
