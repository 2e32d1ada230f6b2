// dsh-ui fences in real Chromium against the real `dsh web` and the mock model: an answer with a
// chart, a table, a malformed fence and a form renders as components (not code); the prompt
// section reached the model; submitting the form sends the answers as the next user message.
import { beforeAll, describe, expect, it, vi } from 'vitest'
import { hasChromium, type Page, useWebApp, withArtifacts } from '@dsh/web-testkit'

vi.setConfig({ testTimeout: 60_000, hookTimeout: 90_000 })

const fence = (value: unknown) => `\`\`\`dsh-ui\n${typeof value === 'string' ? value : JSON.stringify(value)}\n\`\`\``
const ANSWER = [
  'Here is the summary.',
  fence({
    type: 'chart',
    title: 'Tests',
    data: [
      { label: 'passed', value: 30 },
      { label: 'failed', value: 10 },
    ],
  }),
  fence({
    type: 'table',
    columns: ['file', 'lines'],
    rows: [
      ['a.ts', 12],
      ['<b>x</b>', 3],
    ],
  }),
  fence('{"type": "dial"}'),
  fence({
    type: 'form',
    title: 'Release',
    fields: [
      { name: 'version', label: 'Version', kind: 'text' },
      { name: 'channel', label: 'Channel', kind: 'select', options: ['stable', 'beta'] },
    ],
    submit: 'Go',
  }),
  '```ts\nconst plain = 1\n```',
].join('\n\n')

describe.skipIf(!hasChromium())('ui-fences in the browser', () => {
  const web = useWebApp({ steps: [{ text: ANSWER }, { text: 'Releasing 2.0 on beta.' }] as never })
  let page: Page
  let errors: string[]
  beforeAll(async () => {
    ;({ page, errors } = await web.openPage())
  })
  const input = () => page.locator('textarea.dsh-composer-input')

  it('renders the fences as components and sends a submitted form as the next message', async () => {
    await withArtifacts(page, 'dsh-ui-fences', async () => {
      await input().fill('summarise')
      await input().press('Enter')
      const answer = page.locator('[data-node="assistant"]', { hasText: 'Here is the summary.' })
      await answer.locator('[data-dsh-ui="form"]').waitFor()
      expect(await answer.locator('[data-dsh-ui="chart"] [data-bar]').count()).toBe(2)
      expect(await answer.locator('[data-bar="passed"] span').last().textContent()).toBe('30')
      const cells = await answer.locator('[data-dsh-ui="table"] td').allTextContents()
      expect(cells).toEqual(['a.ts', '12', '<b>x</b>', '3'])
      expect(await answer.locator('[data-dsh-ui="table"] b').count()).toBe(0)
      expect(await answer.locator('[data-dsh-ui="invalid"] .dsh-ui-error').textContent()).toContain(
        'unknown type "dial"',
      )
      // A fence in another language is still code.
      expect(await answer.locator('pre code', { hasText: 'const plain = 1' }).count()).toBe(1)
      const system = JSON.stringify((web.mock.requests[0].body as { messages: unknown[] }).messages[0])
      expect(system).toContain('fenced block tagged `dsh-ui`')
      const form = answer.locator('[data-dsh-ui="form"]')
      await form.locator('input[name="version"]').fill('2.0')
      await form.locator('select[name="channel"]').selectOption('beta')
      await form.getByRole('button', { name: 'Go' }).click()
      await page.locator('[data-node="assistant"]', { hasText: 'Releasing 2.0 on beta.' }).waitFor()
      const last = web.mock.requests.at(-1)!.body as { messages: Array<{ role: string; content: unknown }> }
      expect(JSON.stringify(last.messages.at(-1)!.content)).toContain(
        'Form \\"Release\\" submitted:\\nVersion: 2.0\\nChannel: beta',
      )
      expect(errors).toEqual([])
    })
  })
})
