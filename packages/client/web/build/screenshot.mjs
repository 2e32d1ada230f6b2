// Regenerates docs/screenshot.png: the real dsh web, the mock model (a bash call, then a table and
// a task list), Debian chromium. usage: node packages/client/web/build/screenshot.mjs [out.png]
import { fileURLToPath } from 'node:url'
const { startWebApp, launchBrowser } = await import(
  new URL('../../../test-support/web-testkit/dist/index.js', import.meta.url).href
)
import { writeFileSync } from 'node:fs'
const app = await startWebApp({
  steps: [
    {
      reasoning: 'The user wants to know what is in the project. I will list the files first.',
      toolCalls: [{ name: 'bash', arguments: { command: 'ls -1', description: 'List the project files' } }],
    },
    {
      text: 'The project holds two files:\n\n| file | what it is |\n| --- | --- |\n| `README.md` | the project introduction |\n| `main.py` | the entry point |\n\nNext steps:\n\n- [x] list the files\n- [ ] read `main.py`\n',
    },
  ],
})
writeFileSync(app.cwd + '/README.md', '# demo\n')
writeFileSync(app.cwd + '/main.py', 'print("hi")\n')
const browser = await launchBrowser()
try {
  const context = await browser.newContext({ viewport: { width: 1280, height: 760 }, deviceScaleFactor: 1 })
  const page = await context.newPage()
  await page.goto(app.url)
  await page.waitForSelector('html[data-ready="true"]')
  await page.waitForURL(/\/s\//)
  const box = page.locator('textarea').first()
  await box.fill('What is in this project?')
  await box.press('Enter')
  await page.waitForFunction(
    () => document.body.innerText.includes('read main.py') || document.body.innerText.includes('Next steps'),
    null,
    { timeout: 30000 },
  )
  await page.waitForTimeout(800)
  await page.screenshot({ path: process.argv[2] ?? fileURLToPath(new URL('../docs/screenshot.png', import.meta.url)) })
} finally {
  await browser.close()
  await app.close()
}
