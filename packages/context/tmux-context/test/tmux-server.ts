// A private tmux server for tests (`tmux -L dsh-test-<random>`) and an agent process started in
// one of its panes (test/fixtures/pane-agent.ts), driven over loopback HTTP.
import { execFileSync } from 'node:child_process'
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { AnySessionEvent } from '@dsh/session'

export const REPO = fileURLToPath(new URL('../../../../', import.meta.url))
const DRIVER = fileURLToPath(new URL('./fixtures/pane-agent.ts', import.meta.url))

const quote = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`

export interface AgentState {
  pid: number
  events: AnySessionEvent[]
  /** Messages of every model request so far. */
  requests: Array<Array<{ role: string; content: unknown }>>
}

export class TmuxServer {
  readonly socket = `dsh-test-${process.pid}-${Math.random().toString(36).slice(2, 8)}`
  readonly dir = mkdtempSync(join(tmpdir(), 'dsh-tmux-'))
  private agents = 0

  constructor() {
    // A detached session whose first window just sleeps; agents get their own windows.
    this.tmux('-f', '/dev/null', 'new-session', '-d', '-s', 'main', '-x', '160', '-y', '48', 'sleep 100000')
  }

  tmux(...args: string[]): string {
    return execFileSync('tmux', ['-L', this.socket, ...args], {
      encoding: 'utf8',
      env: { ...process.env, TMUX: '' },
    }).trimEnd()
  }

  /** Starts the pane agent in a new window named `name`; resolves once it serves HTTP. */
  async startAgent(name: string, config: { tmux?: object; bash?: object }): Promise<PaneAgent> {
    const id = ++this.agents
    const portFile = join(this.dir, `agent-${id}.port`)
    const errFile = join(this.dir, `agent-${id}.err`)
    const cwd = mkdtempSync(join(this.dir, `cwd-${id}-`))
    const env = JSON.stringify({ ...config, cwd })
    const command = `exec node --import tsx ${quote(DRIVER)} ${quote(portFile)} 2>${quote(errFile)}`
    const [windowId, paneId] = this.tmux(
      'new-window',
      '-d',
      '-P',
      '-F',
      '#{window_id} #{pane_id}',
      '-t',
      'main:',
      '-n',
      name,
      '-c',
      REPO,
      '-e',
      `DSH_TEST_CONFIG=${env}`,
      command,
    ).split(' ')
    for (let i = 0; i < 600 && !existsSync(portFile); i++) await new Promise((r) => setTimeout(r, 50))
    if (!existsSync(portFile)) {
      throw new Error(
        `pane agent did not start: ${existsSync(errFile) ? readFileSync(errFile, 'utf8') : '(no stderr)'}`,
      )
    }
    return new PaneAgent(Number(readFileSync(portFile, 'utf8')), windowId, paneId, errFile)
  }

  kill(): void {
    try {
      this.tmux('kill-server')
    } catch {
      // already gone
    }
    rmSync(this.dir, { recursive: true, force: true })
  }
}

export class PaneAgent {
  constructor(
    readonly port: number,
    readonly windowId: string,
    readonly paneId: string,
    private readonly errFile: string,
  ) {}

  async call(path: '/prompt' | '/resume' | '/exit', body: object = {}): Promise<AgentState> {
    const res = await fetch(`http://127.0.0.1:${this.port}${path}`, { method: 'POST', body: JSON.stringify(body) })
    const text = await res.text()
    if (!res.ok) throw new Error(`pane agent ${path} failed: ${text}\n${this.stderr()}`)
    return JSON.parse(text) as AgentState
  }

  stderr(): string {
    return existsSync(this.errFile) ? readFileSync(this.errFile, 'utf8') : ''
  }

  async exit(): Promise<void> {
    await this.call('/exit').catch(() => {})
  }
}

/** Texts of the `user/message` events injected by `plugin`. */
export function injections(events: AnySessionEvent[], plugin = '@dsh/tmux-context'): string[] {
  return events.flatMap((e) => {
    if (e.type !== 'user/message') return []
    const data = e.data as {
      content: Array<{ type: string; text?: string }>
      source: { kind: string; plugin?: string }
    }
    if (data.source.kind !== 'plugin' || data.source.plugin !== plugin) return []
    return [data.content.map((b) => b.text ?? '').join('')]
  })
}
