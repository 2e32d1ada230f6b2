// Drives the real `dsh` bin inside a real tmux server (its own socket, so a developer's tmux is
// never touched) against @dsh/llm-mock-server, with a temporary DSH_HOME and working directory.
import { type ChildProcess, execFileSync, spawn } from 'node:child_process'
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { startMockServer, type MockServer } from '@dsh/llm-mock-server'
import { DSH_BIN } from '@dsh/cli-testkit'

export const SOCKET = `dsh-tui-test-${process.pid}`
let counter = 0

export function tmux(...args: string[]): string {
  // When a test closes the last session, the tmux server exits; a new-session issued while it is
  // still going away fails with "server exited unexpectedly". That race is tmux's, not dsh's: a
  // new session is retried a few times (each try is a fresh server start).
  for (let attempt = 1; ; attempt++) {
    try {
      return execFileSync('tmux', ['-L', SOCKET, '-f', '/dev/null', ...args], {
        encoding: 'utf8',
        stdio: ['ignore', 'pipe', 'pipe'],
      })
    } catch (error) {
      const stderr = String((error as { stderr?: unknown }).stderr ?? '')
      if (
        args[0] !== 'new-session' ||
        attempt >= 5 ||
        !/server exited unexpectedly|lost server|no server running/.test(stderr)
      )
        throw error
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 100 * attempt)
    }
  }
}

export interface Workspace {
  root: string
  home: string
  cwd: string
}

export function workspace(files: Record<string, string> = {}): Workspace {
  const root = mkdtempSync(join(tmpdir(), 'dsh-tui-'))
  const home = join(root, 'home')
  const cwd = join(root, 'work')
  mkdirSync(home)
  mkdirSync(cwd)
  for (const [name, text] of Object.entries(files)) writeFileSync(join(cwd, name), text)
  return { root, home, cwd }
}

export interface TuiOptions {
  steps?: unknown[]
  server?: MockServer
  ws?: Workspace
  args?: string[]
  cols?: number
  rows?: number
  env?: Record<string, string>
}

/** A safety net only: a wait re-reads the screen this often even when tmux reports no output. */
const RECHECK_MS = 250
/** At most one screen read per this many milliseconds while output streams in. */
const MIN_READ_GAP_MS = 40

export class TuiSession {
  /** Chunks the control client has received: tmux reports every write to the pane. */
  private outputs = 0
  private readonly wakers = new Set<() => void>()
  private control: ChildProcess | undefined
  private lastRead = 0

  private constructor(
    readonly name: string,
    readonly server: MockServer,
    readonly ws: Workspace,
    private readonly ownServer: boolean,
  ) {}

  /**
   * A tmux control-mode client on the session: tmux sends it a `%output` line whenever the pane
   * is written to (after the write reached the pane's screen), so waits read the screen when it
   * changed instead of polling it. Without it (it failed to start or ended) waits still re-read
   * every RECHECK_MS.
   */
  private attachControl(): void {
    const control = spawn('tmux', ['-L', SOCKET, '-f', '/dev/null', '-C', 'attach-session', '-t', this.name], {
      stdio: ['pipe', 'pipe', 'ignore'],
    })
    this.control = control
    const wake = () => {
      this.outputs++
      for (const waker of [...this.wakers]) waker()
    }
    control.stdout!.on('data', wake)
    control.on('error', () => {})
    control.on('exit', wake)
  }

  /** Resolves once tmux reported output after `seen`, or after `ms` (the safety net). */
  private changed(seen: number, ms: number): Promise<void> {
    if (this.outputs !== seen) return Promise.resolve()
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer)
        this.wakers.delete(done)
        resolve()
      }
      const timer = setTimeout(done, ms)
      this.wakers.add(done)
    })
  }

  static async start(options: TuiOptions = {}): Promise<TuiSession> {
    const server = options.server ?? (await startMockServer({ steps: (options.steps ?? []) as never }))
    const ws = options.ws ?? workspace()
    const name = `t${process.pid}-${++counter}`
    const env = {
      DSH_HOME: ws.home,
      DEEPSEEK_BASE_URL: server.baseURL,
      DEEPSEEK_API_KEY: 'sk-test-not-a-real-key',
      TERM: 'xterm-256color',
      ...options.env,
    }
    const envArgs = Object.entries(env).map(([k, v]) => `${k}=${shellQuote(v)}`)
    const bin = [process.execPath, DSH_BIN, ...(options.args ?? ['--profile', 'tui'])].map(shellQuote).join(' ')
    // After dsh exits the pane shows its status and stays open, so a test can read both.
    // The terminal modes left behind are printed too: `icanon echo` (restored) or `-icanon -echo` (raw).
    const modes = `stty -a | tr ' ;' '\\n\\n' | grep -xE -- '-?(icanon|echo)' | tr '\\n' ' '`
    const command = `env -u NO_COLOR ${envArgs.join(' ')} ${bin}; echo "[exited $?] [modes: $(${modes})]"; sleep 600`
    tmux(
      'new-session',
      '-d',
      '-s',
      name,
      '-x',
      String(options.cols ?? 100),
      '-y',
      String(options.rows ?? 30),
      '-c',
      ws.cwd,
      command,
    )
    tmux('set-option', '-t', name, 'window-size', 'manual')
    const session = new TuiSession(name, server, ws, options.server === undefined)
    session.attachControl()
    return session
  }

  /** The visible screen as text (no escape sequences). */
  screen(): string {
    return tmux('capture-pane', '-p', '-t', this.name)
  }

  /** Visible screen lines with trailing spaces removed. */
  lines(): string[] {
    return this.screen()
      .split('\n')
      .map((l) => l.replace(/\s+$/, ''))
  }

  /** The whole pane including scrollback. */
  history(): string {
    return tmux('capture-pane', '-p', '-S', '-', '-t', this.name)
  }

  /**
   * Waits until the screen matches, reading it again whenever tmux reports output to the pane;
   * throws with the last screen when it does not match within the deadline.
   */
  async waitFor(test: RegExp | ((screen: string) => boolean), timeoutMs = 20_000): Promise<string> {
    const check = typeof test === 'function' ? test : (s: string) => test.test(s)
    const deadline = Date.now() + timeoutMs
    let last = ''
    while (Date.now() < deadline) {
      // While output streams in, reads are spaced out (each one runs the tmux client).
      const gap = this.lastRead + MIN_READ_GAP_MS - Date.now()
      if (gap > 0) await new Promise((r) => setTimeout(r, gap))
      const seen = this.outputs
      last = this.screen()
      this.lastRead = Date.now()
      if (check(last)) return last
      await this.changed(seen, Math.max(0, Math.min(RECHECK_MS, deadline - Date.now())))
    }
    throw new Error(`screen did not match ${String(test)} within ${timeoutMs} ms; it shows:\n${last}`)
  }

  /** Waits for a match, then until the screen stops changing (a frame may be captured half drawn). */
  async settled(test: RegExp | ((screen: string) => boolean), timeoutMs = 20_000): Promise<string> {
    let last = await this.waitFor(test, timeoutMs)
    const deadline = Date.now() + timeoutMs
    while (Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 300))
      const now = this.screen()
      if (now === last) return now
      last = now
    }
    return last
  }

  /** Types literal text. */
  type(text: string): void {
    tmux('send-keys', '-t', this.name, '-l', text)
  }

  /** Pastes text as the terminal would (bracketed, when the app turned bracketed paste on). */
  paste(text: string): void {
    tmux('set-buffer', '-b', this.name, text)
    tmux('paste-buffer', '-p', '-d', '-b', this.name, '-t', this.name)
  }

  /** Sends tmux key names (Enter, Escape, C-c, Up, BTab, ...). */
  keys(...keys: string[]): void {
    tmux('send-keys', '-t', this.name, ...keys)
  }

  /** tmux's view of the pane: cursor visible (1/0) and alternate screen on (1/0). */
  cursorAndAltScreen(): { cursor: string; alternate: string } {
    const [cursor, alternate] = tmux('display-message', '-p', '-t', this.name, '#{cursor_flag} #{alternate_on}')
      .trim()
      .split(' ')
    return { cursor, alternate }
  }

  /** Pid of the dsh process (the child of the pane's shell). */
  dshPid(): number {
    const shell = tmux('display-message', '-p', '-t', this.name, '#{pane_pid}').trim()
    const children = execFileSync('pgrep', ['-P', shell], { encoding: 'utf8' }).trim().split('\n')
    return Number(children[0])
  }

  resize(cols: number, rows: number): void {
    tmux('resize-window', '-t', this.name, '-x', String(cols), '-y', String(rows))
  }

  async close(): Promise<void> {
    try {
      tmux('kill-session', '-t', this.name)
    } catch {
      // Already gone.
    }
    // The control client ends with its session; one that did not is stopped.
    if (this.control && this.control.exitCode === null && this.control.signalCode === null) this.control.kill()
    this.control?.stdin?.destroy()
    if (this.ownServer) await this.server.close()
  }
}

export function shellQuote(value: string): string {
  return /^[\w@%+=:,./-]+$/.test(value) ? value : `'${value.replace(/'/g, `'\\''`)}'`
}

/** Display width of a string as a terminal draws it (East Asian wide and fullwidth characters take two cells). */
export function displayWidth(text: string): number {
  let width = 0
  for (const ch of text) {
    const cp = ch.codePointAt(0)!
    const wide =
      (cp >= 0x1100 && cp <= 0x115f) ||
      (cp >= 0x2e80 && cp <= 0xa4cf) ||
      (cp >= 0xac00 && cp <= 0xd7a3) ||
      (cp >= 0xf900 && cp <= 0xfaff) ||
      (cp >= 0xfe30 && cp <= 0xfe4f) ||
      (cp >= 0xff00 && cp <= 0xff60) ||
      (cp >= 0xffe0 && cp <= 0xffe6) ||
      (cp >= 0x20000 && cp <= 0x3fffd)
    width += wide ? 2 : 1
  }
  return width
}

export function killServer(): void {
  try {
    tmux('kill-server')
  } catch {
    // No server running.
  }
}
