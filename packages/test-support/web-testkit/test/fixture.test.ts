// useWebApp against the real `dsh web` and mock model. Three sibling describe blocks stand for three
// test files of one worker (each block's beforeAll runs after the previous block's afterAll, as
// files do): the two in the default configuration share one host, booted at most once, each with
// its own script, requests, folder and sessions; a host that died is replaced for the next file;
// two files with the same patch share a host of that patch; a private one gets its own. A
// last block checks that the shared host stops with the process that started it.
import { spawn } from 'node:child_process'
import { afterAll, describe, expect, it, vi } from 'vitest'
import { ownGates } from '../src/fixture.ts'
import { useWebApp, waitForSessionEvent, webAppBoots } from '../src/index.ts'

vi.setConfig({ testTimeout: 30_000, hookTimeout: 60_000 })

interface Row {
  sessionId: string
  cwd: string
  status: string
}

let bootsAtStart = -1
let firstUrl = ''
let firstCwd = ''
let firstSession = ''

/** Prompts a new session of the fixture's folder and waits for the answer in its history. */
async function turn(web: ReturnType<typeof useWebApp>, text: string): Promise<string> {
  const sessionId = await web.newSession()
  await web.call('sessions.prompt', { sessionId, text })
  await expect
    .poll(async () => (await web.call<{ sessions: Row[] }>('sessions.list', { cwd: web.cwd })).sessions[0]?.status)
    .toBe('idle')
  return sessionId
}

const answers = async (web: ReturnType<typeof useWebApp>, sessionId: string): Promise<string> =>
  JSON.stringify((await web.call('sessions.history', { sessionId })).events)

describe('useWebApp: first default file', () => {
  const web = useWebApp({ steps: [{ text: 'Answer scripted by file one.' }] })
  it('serves this file its own script in a folder of its own', async () => {
    bootsAtStart = webAppBoots()
    expect(web.shared).toBe(true)
    firstUrl = web.url
    firstCwd = web.cwd
    expect(web.cwd).not.toBe(web.app.cwd)
    expect(web.mock.requests).toEqual([])
    firstSession = await turn(web, 'first file asks')
    expect(await answers(web, firstSession)).toContain('Answer scripted by file one.')
    expect(web.mock.remaining).toBe(0)
  })
})

describe('useWebApp: second default file', () => {
  const web = useWebApp({ steps: [{ text: 'Answer scripted by file two.' }, { text: 'And its second step.' }] })
  it('reuses the host with no boot, its own script and requests, and none of the first file’s sessions', async () => {
    expect(web.url).toBe(firstUrl)
    expect(webAppBoots()).toBe(bootsAtStart)
    expect(web.cwd).not.toBe(firstCwd)
    // The first file's session and workspace are gone; its requests are not this file's.
    const { sessions } = await web.call<{ sessions: Row[] }>('sessions.list', { includeArchived: true })
    expect(sessions.map((s) => s.sessionId)).not.toContain(firstSession)
    const { workspaces } = await web.call<{ workspaces: { path: string }[] }>('workspaces.list', {})
    expect(workspaces.map((w) => w.path)).not.toContain(firstCwd)
    expect(web.mock.requests).toEqual([])
    expect(web.mock.remaining).toBe(2)
    const sessionId = await turn(web, 'second file asks')
    expect(await answers(web, sessionId)).toContain('Answer scripted by file two.')
    expect(web.mock.requests.filter((r) => r.path.endsWith('/chat/completions'))).toHaveLength(1)
  })
})

describe('useWebApp: a file with a gate of a name released before it', () => {
  // A gate released on the mock stays open; the file's gates are renamed for it, and its
  // mock.release opens its own.
  const web = useWebApp({ steps: [{ events: [{ text: 'Held, ' }, { gate: 'hold' }, { text: 'then released.' }] }] })
  it('waits at its own gate until the file releases it', async () => {
    expect(ownGates([{ events: [{ gate: 'g' }, { text: 't' }] }, { text: 'x' }], 'file9:')).toEqual([
      { events: [{ gate: 'file9:g' }, { text: 't' }] },
      { text: 'x' },
    ])
    // What an earlier file's release of its gate `hold` opened on the shared mock.
    web.app.mock.release('hold')
    const sessionId = await web.newSession()
    const ended = waitForSessionEvent(web.app, sessionId, 'turn/end')
    await web.call('sessions.prompt', { sessionId, text: 'wait at the gate' })
    await expect.poll(() => web.mock.requests.length).toBe(1)
    const row = async () =>
      (await web.call<{ sessions: Row[] }>('sessions.list', { cwd: web.cwd })).sessions.find(
        (r) => r.sessionId === sessionId,
      )
    expect((await row())?.status).toBe('running')
    web.mock.release('hold')
    await ended
    expect(await answers(web, sessionId)).toContain('Held, then released.')
  })
})

describe('useWebApp: a default file that stops the shared host', () => {
  const web = useWebApp({ steps: [] })
  it('stops it', async () => {
    expect(web.url).toBe(firstUrl)
    await web.app.stop()
  })
})

describe('useWebApp: the default file after it', () => {
  const web = useWebApp({ steps: [{ text: 'Served by the replacement host.' }] })
  it('gets a fresh host instead of the dead one', async () => {
    expect(webAppBoots()).toBe(bootsAtStart + 1)
    expect(web.shared).toBe(true)
    const sessionId = await turn(web, 'after the stop')
    expect(await answers(web, sessionId)).toContain('Served by the replacement host.')
  })
})

// An empty patch layer: a configuration of its own (another host) that changes nothing.
const PATCH = '[]\n'
let patchedUrl = ''

describe('useWebApp: a file with a patch', () => {
  const web = useWebApp({ steps: [{ text: 'Patched one.' }], patch: PATCH })
  it('gets a host of that patch, not the default one', async () => {
    expect(web.shared).toBe(true)
    expect(web.url).not.toBe(firstUrl)
    expect(webAppBoots()).toBe(bootsAtStart + 2)
    patchedUrl = web.url
    const sessionId = await turn(web, 'patched file asks')
    expect(await answers(web, sessionId)).toContain('Patched one.')
  })
})

describe('useWebApp: a second file with the same patch', () => {
  const web = useWebApp({ steps: [{ text: 'Patched two.' }], patch: PATCH })
  it('reuses the host of that patch with no boot, with its own script', async () => {
    expect(web.url).toBe(patchedUrl)
    expect(webAppBoots()).toBe(bootsAtStart + 2)
    expect(web.mock.requests).toEqual([])
    const sessionId = await turn(web, 'second patched file asks')
    expect(await answers(web, sessionId)).toContain('Patched two.')
  })
})

describe('useWebApp: a default file after the patched ones', () => {
  const web = useWebApp({ steps: [{ text: 'Default again.' }] })
  it('still gets the default host', async () => {
    expect(webAppBoots()).toBe(bootsAtStart + 2)
    expect(web.url).not.toBe(patchedUrl)
    const sessionId = await turn(web, 'default file asks')
    expect(await answers(web, sessionId)).toContain('Default again.')
  })
})

describe('useWebApp: a private file', () => {
  const web = useWebApp({ steps: [{ text: 'Private.' }], patch: PATCH, private: true })
  it('gets a host of its own', async () => {
    expect(web.shared).toBe(false)
    expect(web.url).not.toBe(patchedUrl)
    expect(webAppBoots()).toBe(bootsAtStart + 3)
    expect(web.cwd).toBe(web.app.cwd)
    const sessionId = await turn(web, 'private file asks')
    expect(await answers(web, sessionId)).toContain('Private.')
  })
})

describe('useWebApp: the shared host dies with its process', () => {
  // A child node process boots a tethered host, prints its URL, then is SIGKILLed: no hook runs.
  const children: number[] = []
  afterAll(() => {
    for (const pid of children) {
      try {
        process.kill(pid, 'SIGKILL')
      } catch {}
    }
  })
  it('stops the tethered host once its parent is gone', async () => {
    // The transpiled kit (the run's global setup rebuilds dist/): this node runs no TypeScript.
    const script = `import('${new URL('../dist/index.js', import.meta.url).pathname}').then(async (k) => {
      const app = await k.startWebApp({ steps: [], tether: true }); console.log('URL ' + app.url) })`
    const child = spawn(process.execPath, ['--input-type=module', '-e', script], {
      stdio: ['ignore', 'pipe', 'inherit'],
    })
    children.push(child.pid!)
    const url = await new Promise<string>((resolve, reject) => {
      let out = ''
      child.stdout!.setEncoding('utf8').on('data', (d: string) => {
        out += d
        const hit = /URL (\S+)/.exec(out)
        if (hit) resolve(hit[1])
      })
      child.on('exit', (code) => reject(new Error(`the child exited (${code}) before its host started: ${out}`)))
    })
    expect((await fetch(`${url}/client-manifest.json`)).ok).toBe(true)
    child.kill('SIGKILL')
    await expect
      .poll(
        () =>
          fetch(`${url}/client-manifest.json`).then(
            () => 'up',
            () => 'down',
          ),
        { timeout: 20_000, interval: 200 },
      )
      .toBe('down')
  })
})
