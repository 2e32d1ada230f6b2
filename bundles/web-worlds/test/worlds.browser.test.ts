// `dsh web --world local` with a world per workspace, in real Chromium: E2B is played by
// @dsh/e2b-standin and the model by @dsh/llm-mock-server. Two workspaces are added through the
// folder picker, one on this machine and one in an E2B sandbox; a bash command in each session runs
// where its workspace says: the local one writes the local folder and reaches E2B only through a
// child it sends there (`subagent` with `world: "e2b"`); the e2b one writes only the sandbox's copy,
// cannot read this machine's files, and its change reaches only its own folder through the side
// panel's Apply. A world name the host does not have is refused in one sentence.
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import {
  hasChromium,
  launchBrowser,
  openPage,
  startWebApp,
  withArtifacts,
  type Browser,
  type Page,
  type WebApp,
} from '@dsh/web-testkit'
import { startE2bStandin, type E2bStandin } from '@dsh/e2b-standin'

vi.setConfig({ testTimeout: 120_000, hookTimeout: 90_000 })

const bash = (command: string) => ({ toolCalls: [{ name: 'bash', arguments: { command, description: 'where' } }] })
// A file only this machine holds; the e2b session tries to read it by its absolute path.
const SECRET = 'only-on-this-machine'
const secretFile = join(mkdtempSync(join(tmpdir(), 'dsh-worlds-secret-')), 'secret.txt')
writeFileSync(secretFile, `${SECRET}\n`)

describe.skipIf(!hasChromium())('dsh web: a world per workspace', () => {
  let standin: E2bStandin
  let app: WebApp
  let browser: Browser
  let here: string
  let there: string
  beforeAll(async () => {
    standin = await startE2bStandin()
    // The mock model's steps are taken in order: the local session's turn, then the e2b one's.
    app = await startWebApp({
      steps: [
        bash('echo made-locally > where.txt && cat notes.txt'),
        // A path into the e2b workspace's folder: a local session reads this machine's copy.
        { toolCalls: [{ name: 'read', arguments: { file_path: '../there/notes.txt' } }] },
        // A child sent to the e2b world from a local session runs in a sandbox of its own.
        {
          toolCalls: [{ name: 'subagent', arguments: { description: 'remote part', prompt: 'do it', world: 'e2b' } }],
        },
        bash('echo from-child > child.txt'),
        { text: 'Child done.' },
        { text: 'Local done.' },
        bash(`echo made-remotely > where.txt; cat notes.txt; cat ${secretFile} || echo secret-not-here`),
        { text: 'Remote done.' },
      ] as never,
      args: ['--world', 'local'],
      env: standin.env,
    })
    here = join(app.home, 'projects', 'here')
    there = join(app.home, 'projects', 'there')
    mkdirSync(here, { recursive: true })
    mkdirSync(there, { recursive: true })
    writeFileSync(join(here, 'notes.txt'), 'local notes\n')
    writeFileSync(join(there, 'notes.txt'), 'remote notes\n')
    browser = await launchBrowser()
  })
  afterAll(async () => {
    await browser?.close()
    await app?.close()
    await standin?.close()
  })

  /** Adds `folder` (a child of ~/projects) as a workspace in `world` through the picker. */
  async function addWorkspace(page: Page, folder: string, world: string): Promise<void> {
    await page.locator('[data-directory-picker-open]').click()
    const dialog = page.locator('[data-directory-picker]')
    await dialog.locator('[data-directory-entry="projects"]').click()
    await dialog.locator(`[data-directory-entry="${folder}"]`).click()
    await expect
      .poll(() => dialog.locator('[data-directory-path]').textContent())
      .toBe(join(app.home, 'projects', folder))
    await dialog.locator('[data-directory-world]').selectOption(world)
    await dialog.locator('[data-directory-use]').click()
    await expect.poll(() => dialog.count()).toBe(0)
  }

  /** Opens a new session of the workspace at `path`, sends one prompt, waits for the answer text. */
  async function runTurn(page: Page, path: string, answer: string): Promise<string> {
    const { workspaces } = await app.call('workspaces.list')
    const workspace = workspaces.find((w: { path: string }) => w.path === path)
    const { session } = await app.call('sessions.create', { workspaceId: workspace.id })
    await page.goto(`${app.url}/s/${session.sessionId}`)
    const input = page.locator('textarea.dsh-composer-input')
    await input.fill('run it')
    await input.press('Enter')
    await expect.poll(() => page.getByText(answer).count(), { timeout: 60_000 }).toBeGreaterThan(0)
    return session.sessionId
  }

  /** The text of the session's tool results, from its log. */
  async function toolOutput(sessionId: string): Promise<string> {
    const { events } = await app.call('sessions.history', { sessionId })
    return JSON.stringify(events.filter((e: { type: string }) => e.type === 'tool/result'))
  }

  /** The text of the session's user messages (the policy announcement is one), from its log. */
  async function userMessages(sessionId: string): Promise<string> {
    const { events } = await app.call('sessions.history', { sessionId })
    return JSON.stringify(events.filter((e: { type: string }) => e.type === 'user/message'))
  }
  const E2B_POLICY = 'e2b world: commands and file edits run in a remote E2B sandbox'

  const processStarts = () => standin.requests.filter((r) => /process\.Process\/Start$/.test(r.path)).length

  it('runs each session in its workspace world, and refuses an unknown world', async () => {
    const { page, errors } = await openPage(browser, app.url)
    await withArtifacts(page, 'web-worlds', async () => {
      await addWorkspace(page, 'here', 'local')
      await addWorkspace(page, 'there', 'e2b')
      const { workspaces } = await app.call('workspaces.list')
      // (the launch folder is a workspace too, in the host's default world)
      expect(workspaces.map((w: { path: string; world?: string }) => [w.path, w.world])).toEqual([
        [app.cwd, undefined],
        [here, 'local'],
        [there, 'e2b'],
      ])

      // Each workspace heading names its world; the launch folder has the host's default.
      const badge = (name: string) =>
        page.locator(`section.session-group[aria-label="${name}"] [data-workspace-world]`).textContent()
      await expect.poll(() => badge('there')).toBe('e2b')
      expect(await badge('here')).toBe('local')
      expect(await badge('project')).toBe('local')

      // The local workspace: the command and the read ran on this machine.
      const local = await runTurn(page, here, 'Local done.')
      const localOutput = await toolOutput(local)
      expect(localOutput).toContain('local notes')
      expect(localOutput).toContain('remote notes')
      expect(readFileSync(join(here, 'where.txt'), 'utf8')).toBe('made-locally\n')
      // Only the child reached E2B: one sandbox, created for it and killed when it ended, its
      // change saved as its own patch; the child's file is not in the local folder.
      const creates = standin.requests.filter((r) => r.method === 'POST' && r.path === '/sandboxes')
      expect(creates).toHaveLength(1)
      expect(standin.sandboxes()).toEqual([])
      expect(localOutput).toContain('Child done.')
      expect(existsSync(join(here, 'child.txt'))).toBe(false)
      const patches = join(app.home, '.dsh', 'e2b-patches')
      expect(
        readdirSync(patches)
          .map((f) => readFileSync(join(patches, f), 'utf8'))
          .join(''),
      ).toContain('+from-child')
      const startsAfterLocal = processStarts()
      expect(await userMessages(local)).not.toContain(E2B_POLICY)
      // Its side panel has no sandbox change to offer (this machine's world works on the folder).
      const panel = page.locator('[data-testid="e2b-review"]')
      await expect.poll(() => panel.getAttribute('data-e2b-phase')).toBe('none')

      // The e2b workspace: the command ran in a sandbox holding a copy of `there` (at its path);
      // the local folder is untouched, and the local workspace's file does not exist there.
      const remote = await runTurn(page, there, 'Remote done.')
      const [sandbox] = standin.sandboxes()
      expect(sandbox).toBeDefined()
      expect(processStarts()).toBeGreaterThan(startsAfterLocal)
      expect(readFileSync(join(standin.rootOf(sandbox.record.id), there, 'where.txt'), 'utf8')).toBe('made-remotely\n')
      expect(existsSync(join(there, 'where.txt'))).toBe(false)
      expect(readFileSync(join(here, 'where.txt'), 'utf8')).toBe('made-locally\n')
      // The model of the e2b session is told its world's confinement.
      expect(await userMessages(remote)).toContain(E2B_POLICY)
      const result = await toolOutput(remote)
      expect(result).toContain('remote notes')
      expect(result).toContain('secret-not-here')
      expect(result).not.toContain(SECRET)

      // The session's panel offers its sandbox's change; Apply brings it into `there` only.
      await expect.poll(() => panel.getAttribute('data-e2b-phase'), { timeout: 30_000 }).toBe('offered')
      expect(await panel.locator('[data-e2b-files] li').allTextContents()).toEqual(['where.txt'])
      await panel.locator('[data-e2b-action="apply"]').click()
      await expect.poll(() => panel.getAttribute('data-e2b-phase')).toBe('settled')
      expect(await panel.locator('[data-e2b-line]').textContent()).toMatch(
        new RegExp(`^applied the patch \\S+\\.patch to ${there} \\(where\\.txt\\)$`),
      )
      expect(readFileSync(join(there, 'where.txt'), 'utf8')).toBe('made-remotely\n')
      expect(readFileSync(join(here, 'where.txt'), 'utf8')).toBe('made-locally\n')
      expect(existsSync(join(app.cwd, 'where.txt'))).toBe(false)
      // A local session has nothing to settle; a file that was not offered is refused.
      await expect(app.call('worlds.apply', { sessionId: local, file: '/tmp/x.patch' })).rejects.toThrow(
        /409 REVIEW_NOT_FOUND: \/tmp\/x\.patch is not the change offered now for /,
      )

      expect(errors.filter((e) => !/status of 4\d\d/.test(e))).toEqual([])
    })
    // One sentence for a world this host does not have.
    await expect(app.call('workspaces.create', { path: join(app.home, 'projects'), world: 'mars' })).rejects.toThrow(
      /^workspaces\.create: 400 INVALID_PARAMS: world: unknown world "mars" \(known: local, e2b\)$/,
    )
  })
})
