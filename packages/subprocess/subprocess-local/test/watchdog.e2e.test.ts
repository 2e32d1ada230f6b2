// End-to-end: nothing the real `dsh` bin starts through the subprocess seam outlives it. An MCP
// server (from the user's settings.yaml) that ignores SIGTERM and SIGHUP, with a grandchild that
// does too, and a terminal program (a PTY session leader ignoring them as well) end after dsh is
// SIGKILLed; and a normal run still stops its server gracefully (SIGTERM first). The model is
// @dsh/llm-mock-server's bin, stalling its answer so that dsh is busy when it is killed.
import { spawn, type ChildProcess } from 'node:child_process'
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  writeFileSync,
} from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterEach, describe, expect, it } from 'vitest'
import { WATCHDOG_PATH, watchdogUnavailable } from '@dsh/posix-spawn'

const DSH_BIN = fileURLToPath(new URL('../../../boot/cli/bin/dsh.mjs', import.meta.url))
const MOCK_BIN = fileURLToPath(
  new URL('../../../test-support/llm-mock-server/bin/dsh-llm-mock-server.mjs', import.meta.url),
)
const SERVER = fileURLToPath(new URL('./fixtures/stubborn-server.mjs', import.meta.url))

const cleanups: Array<() => void> = []
afterEach(() => {
  for (const cleanup of cleanups.splice(0).reverse()) {
    try {
      cleanup()
    } catch {
      // already gone
    }
  }
})

/** True once `pid` is gone (a zombie counts as gone: it runs nothing and holds nothing). */
function gone(pid: number): boolean {
  try {
    process.kill(pid, 0)
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'ESRCH'
  }
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'latin1')
    const state = stat.charAt(stat.lastIndexOf(')') + 2)
    return state === 'Z' || state === 'X'
  } catch {
    return true
  }
}

async function until<T>(what: string | (() => string), check: () => T | undefined | false, ms = 60_000): Promise<T> {
  const deadline = Date.now() + ms
  for (;;) {
    const value = check()
    if (value) return value
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${typeof what === 'string' ? what : what()}`)
    await new Promise((resolve) => setTimeout(resolve, 25))
  }
}

/** The watchdog dsh started: its child running the watchdog executable. */
function watchdogOf(pid: number): number | undefined {
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'latin1')
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1])
      if (ppid !== pid) continue
      if (readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0')[0] === WATCHDOG_PATH) return Number(entry)
    } catch {
      // gone meanwhile
    }
  }
  return undefined
}

/** The mock model bin serving `steps`; resolves with its base URL. */
async function mockModel(root: string, steps: unknown[]): Promise<string> {
  const script = join(root, 'script.json')
  writeFileSync(script, JSON.stringify({ steps }))
  const child = spawn(process.execPath, [MOCK_BIN, '--script', script], { stdio: ['ignore', 'pipe', 'inherit'] })
  cleanups.push(() => child.kill('SIGKILL'))
  return new Promise((resolve, reject) => {
    let out = ''
    child.stdout!.setEncoding('utf8').on('data', (text: string) => {
      out += text
      if (out.includes('\n')) resolve(out.split('\n')[0].trim())
    })
    child.once('exit', (code) => reject(new Error(`the mock model exited (${code})`)))
  })
}

interface Dsh {
  child: ChildProcess
  stderr: () => string
  stdout: () => string
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>
}

function startDsh(root: string, baseURL: string, args: string[], env: Record<string, string> = {}): Dsh {
  const cwd = join(root, 'project')
  mkdirSync(cwd, { recursive: true })
  const child = spawn(process.execPath, [DSH_BIN, '--profile', 'headless', ...args], {
    cwd,
    env: {
      PATH: process.env.PATH ?? '/usr/bin:/bin',
      HOME: process.env.HOME ?? root,
      DSH_HOME: join(root, 'home'),
      DEEPSEEK_BASE_URL: baseURL,
      DEEPSEEK_API_KEY: 'x',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  cleanups.push(() => child.kill('SIGKILL'))
  let stderr = ''
  let stdout = ''
  child.stderr!.setEncoding('utf8').on('data', (text: string) => (stderr += text))
  child.stdout!.setEncoding('utf8').on('data', (text: string) => (stdout += text))
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('exit', (code, signal) => resolve({ code, signal })),
  )
  return { child, stderr: () => stderr, stdout: () => stdout, exited }
}

function settings(root: string, pidFile: string, mode: 'stubborn' | 'polite'): void {
  mkdirSync(join(root, 'home'), { recursive: true })
  const args = JSON.stringify([SERVER, pidFile, mode])
  writeFileSync(
    join(root, 'home', 'settings.yaml'),
    `mcpServers:\n  stubborn:\n    command: ${JSON.stringify(process.execPath)}\n    args: ${args}\n`,
  )
}

function pidsIn(file: string): number[] | undefined {
  if (!existsSync(file)) return undefined
  const pids = readFileSync(file, 'utf8').trim().split(/\s+/).map(Number)
  for (const pid of pids) cleanups.push(() => process.kill(pid, 'SIGKILL'))
  return pids
}

function tempRoot(): string {
  const root = realpathSync(mkdtempSync(join(tmpdir(), 'dsh-watchdog-e2e-')))
  cleanups.push(() => rmSync(root, { recursive: true, force: true }))
  return root
}

describe.runIf(process.platform === 'linux' && watchdogUnavailable() === undefined)(
  'nothing the seam started outlives dsh',
  () => {
    it("a SIGKILLed dsh takes its MCP server (which ignores SIGTERM) and the server's grandchild with it", {
      timeout: 120_000,
    }, async () => {
      const root = tempRoot()
      const pidFile = join(root, 'server.pids')
      settings(root, pidFile, 'stubborn')
      const baseURL = await mockModel(root, [{ events: [{ stall: true }] }])
      const dsh = startDsh(root, baseURL, ['-p', 'hello'])
      const pids = await until(`the MCP server to start (dsh stderr: ${dsh.stderr()})`, () => pidsIn(pidFile))
      // Started (synchronously) by the spawn of the server, before the server wrote its pids.
      const watchdog = watchdogOf(dsh.child.pid!)
      for (const pid of pids) expect(gone(pid)).toBe(false)

      // A server started any other way (no watchdog beside dsh) says so here, not as a timeout.
      expect(watchdog, `no watchdog child of dsh (dsh stderr: ${dsh.stderr()})`).toBeGreaterThan(1)
      dsh.child.kill('SIGKILL')
      expect(await dsh.exited).toMatchObject({ signal: 'SIGKILL' })
      await until(
        () =>
          `the MCP server and its grandchild to end (alive: ${pids.filter((pid) => !gone(pid)).join(' ')}; watchdog ${watchdog} ${gone(watchdog!) ? 'gone' : 'running'}; dsh stderr: ${dsh.stderr()})`,
        () => pids.every(gone),
      )
      await until('the watchdog to exit', () => gone(watchdog!))
    })

    it("a SIGKILLed dsh takes a terminal's program (a PTY session ignoring SIGHUP and SIGTERM) and its background job with it", {
      timeout: 120_000,
    }, async () => {
      const root = tempRoot()
      const pidFile = join(root, 'terminal.pids')
      const patch = join(root, 'layer.patch.yml')
      writeFileSync(patch, '- id: terminals\n  disabled: false\n- id: tool-terminal\n  disabled: false\n')
      const script = `trap '' HUP TERM; sleep 600 & echo $$ $! > ${pidFile}.tmp; mv ${pidFile}.tmp ${pidFile}; wait`
      const baseURL = await mockModel(root, [
        { toolCalls: [{ id: 'o', name: 'terminal_open', arguments: { command: ['/bin/sh', '-c', script] } }] },
        { events: [{ stall: true }] },
      ])
      // Unconfined, so the terminal's program is dsh's own child (a sandbox's bwrap dies with its
      // parent on its own: --die-with-parent).
      const dsh = startDsh(
        root,
        baseURL,
        ['--patch', patch, '--output-format', 'stream-json', '-p', 'open a terminal'],
        {
          DSH_PERMISSION_MODE: 'danger-full-access',
        },
      )
      const pids = await until(`the terminal's program to start (dsh stderr: ${dsh.stderr()})`, () => pidsIn(pidFile))
      for (const pid of pids) expect(gone(pid)).toBe(false)
      // Kill only once terminal_open has returned (its result is on stdout): the seam registers the
      // new process group with the watchdog right after the spawn, and a kill inside that window
      // is the known limit named in the README, not what this test is about. On a loaded machine
      // the window was wide enough to hit (issue 44's first loaded run).
      await until('the terminal_open result', () => /"type":"tool\/result"/.test(dsh.stdout()))

      dsh.child.kill('SIGKILL')
      await dsh.exited
      await until("the terminal's program and its job to end", () => pids.every(gone))
    })

    it('a normal run still stops its MCP server gracefully (SIGTERM first), and the watchdog leaves with dsh', {
      timeout: 120_000,
    }, async () => {
      const root = tempRoot()
      const pidFile = join(root, 'server.pids')
      settings(root, pidFile, 'polite')
      const baseURL = await mockModel(root, [{ text: 'done' }])
      const dsh = startDsh(root, baseURL, ['-p', 'hello'])
      const pids = await until(`the MCP server to start (dsh stderr: ${dsh.stderr()})`, () => pidsIn(pidFile))
      const watchdog = watchdogOf(dsh.child.pid!)
      expect(await dsh.exited, dsh.stderr()).toEqual({ code: 0, signal: null })
      // dsh stopped the server itself before exiting: SIGTERM, once.
      expect(gone(pids[0])).toBe(true)
      expect(readFileSync(`${pidFile}.term`, 'utf8')).toBe('TERM\n')
      expect(watchdog).toBeGreaterThan(1)
      await until('the watchdog to exit', () => gone(watchdog!))
    })
  },
)
