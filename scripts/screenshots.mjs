#!/usr/bin/env node
// The README's screenshots, taken from the real thing: boots `dsh web` (packages/boot/cli/bin/dsh.mjs,
// through @dsh/web-testkit) in a temporary HOME and DSH_HOME against the scripted
// @dsh/llm-mock-server, drives one short conversation (a prompt, a tool call card, an answer) in
// Debian's chromium through playwright-core, and writes PNGs. Every wait is for a DOM state or the
// session's status, never for a fixed time, so a redesigned client only needs the selectors below.
import { mkdirSync, statSync, writeFileSync } from 'node:fs'
import { join, relative, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'

const ROOT = fileURLToPath(new URL('..', import.meta.url))

const HELP = `Usage: node scripts/screenshots.mjs [--out DIR] [--only NAMES] [--timeout MS]

Boots the real "dsh web" against the scripted mock model in a temporary HOME, sends one prompt
that runs a tool and answers, and saves:

  desktop-light.png   1280x800, light theme
  desktop-dark.png    1280x800, dark theme (skipped when the client has no theme switch)
  mobile.png          390x844 (light), the layout a phone gets

  --out DIR       where to write (default: docs/screenshots)
  --only NAMES    comma-separated subset: desktop-light,desktop-dark,mobile
  --timeout MS    longest wait for any one page state (default 30000)
  --help, -h      this help

Needs: a built checkout (node scripts/build.mjs and node scripts/build-client.mjs, which
"pnpm install" runs) and a Chromium at $DSH_CHROMIUM or /usr/bin/chromium.

What the page must offer (change these selectors here when the client changes):
  html[data-ready="true"]          the app has booted
  textarea[data-composer="true"]   the prompt box (Enter sends)
  [data-node="tool"]               a tool call card in the transcript
  window.__dsh.theme.set(t)        optional theme switch, then html[data-theme="<t>"]
The final answer is found by its text. Exit status: 0 written, 1 a failure (one line), 2 usage.
`

const SELECTORS = {
  composer: 'textarea[data-composer="true"]',
  tool: '[data-node="tool"]',
}
const PROMPT = 'What does this project hold, and how big is it?'
const ANSWER_LEAD = 'A small TypeScript project'
const STEPS = [
  {
    toolCalls: [
      {
        name: 'bash',
        arguments: { command: 'ls && wc -l src/*.ts', description: 'List the files and count their lines' },
      },
    ],
  },
  {
    text: `${ANSWER_LEAD}: a README, a \`package.json\` and two modules in \`src/\`.\n\n| file | lines |\n|---|---|\n| \`src/greet.ts\` | 3 |\n| \`src/index.ts\` | 2 |\n\nThe entry point \`src/index.ts\` re-exports \`greet\`.`,
  },
]
const PROJECT = {
  'README.md': '# hello\n\nA greeting library.\n',
  'package.json': '{ "name": "hello", "type": "module" }\n',
  'src/greet.ts': "export function greet(name: string): string {\n  return 'Hello, ' + name\n}\n",
  'src/index.ts': "export { greet } from './greet.ts'\n// the public surface\n",
}
const ALL = ['desktop-light', 'desktop-dark', 'mobile']

function parseArgs(argv) {
  const opts = { out: join(ROOT, 'docs', 'screenshots'), only: ALL, timeout: 30_000 }
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]
    const value = () => {
      const v = argv[++i]
      if (v === undefined || v.startsWith('--')) throw new UsageError(`${a} needs a value`)
      return v
    }
    if (a === '--help' || a === '-h') opts.help = true
    else if (a === '--out') opts.out = resolve(value())
    else if (a === '--only') {
      opts.only = value().split(',').filter(Boolean)
      const bad = opts.only.find((n) => !ALL.includes(n))
      if (bad) throw new UsageError(`--only: unknown shot "${bad}"; valid: ${ALL.join(', ')}`)
    } else if (a === '--timeout') {
      opts.timeout = Number(value())
      if (!Number.isFinite(opts.timeout) || opts.timeout <= 0) throw new UsageError('--timeout needs milliseconds')
    } else throw new UsageError(`unknown option ${a}`)
  }
  return opts
}

class UsageError extends Error {}

/** Waits until the host reports the session as no longer running (the turn and its writes ended). */
async function waitIdle(app, sessionId, timeout) {
  const deadline = Date.now() + timeout
  for (;;) {
    const { sessions } = await app.call('sessions.list', {})
    const status = sessions.find((s) => s.sessionId === sessionId)?.status
    if (status && status !== 'running') return
    if (Date.now() > deadline) throw new Error(`the session stayed "${status}" for ${timeout} ms`)
    await new Promise((r) => setTimeout(r, 100))
  }
}

/** Light or dark through the client's own switch; false when it has none. */
async function setTheme(page, theme, timeout) {
  const has = await page.evaluate(() => typeof globalThis.__dsh?.theme?.set === 'function')
  if (!has) return false
  await page.evaluate((t) => globalThis.__dsh.theme.set(t), theme)
  await page.waitForSelector(`html[data-theme="${theme}"]`, { timeout })
  return true
}

/** A fresh page with the conversation shown and settled. */
async function converse(browser, app, viewport, timeout) {
  const context = await browser.newContext({
    viewport,
    deviceScaleFactor: viewport.width < 600 ? 2 : 1,
    locale: 'en-US',
    colorScheme: 'light',
    reducedMotion: 'reduce',
  })
  const page = await context.newPage()
  await page.goto(app.url)
  await page.waitForSelector('html[data-ready="true"]', { timeout })
  await page.waitForURL(/\/s\/[^/]+$/, { timeout })
  return { context, page }
}

async function main() {
  let opts
  try {
    opts = parseArgs(process.argv.slice(2))
  } catch (error) {
    if (!(error instanceof UsageError)) throw error
    process.stderr.write(`screenshots: ${error.message}\nscreenshots: see "node scripts/screenshots.mjs --help"\n`)
    return 2
  }
  if (opts.help) {
    process.stdout.write(HELP)
    return 0
  }
  const kit = await import(join(ROOT, 'packages/test-support/web-testkit/dist/index.js')).catch((error) => {
    throw new Error(`cannot load @dsh/web-testkit (run node scripts/build.mjs first): ${error.message}`)
  })
  if (!kit.hasChromium()) throw new Error(`no Chromium at ${kit.CHROMIUM_PATH} (set DSH_CHROMIUM)`)
  mkdirSync(opts.out, { recursive: true })
  // One mock step list per conversation: the desktop and the mobile page each send the prompt.
  const conversations = opts.only.includes('mobile') && opts.only.some((n) => n.startsWith('desktop')) ? 2 : 1
  const app = await kit.startWebApp({ steps: Array.from({ length: conversations }, () => STEPS).flat() })
  const browser = await kit.launchBrowser()
  const written = []
  const shoot = async (page, name) => {
    const file = join(opts.out, `${name}.png`)
    await page.screenshot({ path: file, animations: 'disabled', caret: 'hide' })
    written.push(`${relative(process.cwd(), file)} (${Math.round(statSync(file).size / 1024)} KB)`)
  }
  try {
    for (const [path, text] of Object.entries(PROJECT)) {
      mkdirSync(join(app.cwd, path, '..'), { recursive: true })
      writeFileSync(join(app.cwd, path), text)
    }
    const runConversation = async (viewport) => {
      const { context, page } = await converse(browser, app, viewport, opts.timeout)
      const sessionId = decodeURIComponent(new URL(page.url()).pathname.split('/').pop())
      await setTheme(page, 'light', opts.timeout)
      const input = page.locator(SELECTORS.composer)
      await input.fill(PROMPT)
      await input.press('Enter')
      await page.locator(SELECTORS.tool).first().waitFor({ timeout: opts.timeout })
      await page.getByText(ANSWER_LEAD).first().waitFor({ timeout: opts.timeout })
      await waitIdle(app, sessionId, opts.timeout)
      // Nothing left streaming: the answer node has no streaming marker any more.
      await page.waitForFunction(() => !document.querySelector('[data-streaming]'), null, { timeout: opts.timeout })
      await page.evaluate(() => document.activeElement instanceof HTMLElement && document.activeElement.blur())
      return { context, page }
    }
    if (opts.only.some((n) => n.startsWith('desktop'))) {
      const { context, page } = await runConversation({ width: 1280, height: 800 })
      if (opts.only.includes('desktop-light')) await shoot(page, 'desktop-light')
      if (opts.only.includes('desktop-dark')) {
        if (await setTheme(page, 'dark', opts.timeout)) await shoot(page, 'desktop-dark')
        else process.stderr.write('screenshots: the client has no theme switch; desktop-dark skipped\n')
      }
      await context.close()
    }
    if (opts.only.includes('mobile')) {
      const { context, page } = await runConversation({ width: 390, height: 844 })
      await shoot(page, 'mobile')
      await context.close()
    }
  } finally {
    await browser.close().catch(() => {})
    await app.close()
  }
  for (const line of written) process.stdout.write(`screenshots: wrote ${line}\n`)
  return 0
}

main().then(
  (code) => process.exit(code),
  (error) => {
    process.stderr.write(`screenshots: ${String(error?.message ?? error).split('\n')[0]}\n`)
    process.exit(1)
  },
)
