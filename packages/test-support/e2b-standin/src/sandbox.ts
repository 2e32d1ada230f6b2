// One stand-in sandbox: a private root directory that is `/` for every command it runs (under
// bubblewrap, with the host's /usr and /etc mounted read-only), its running processes, and the
// path resolution the filesystem service uses so a symlink inside the root never reaches the host.
import { spawn, type ChildProcess } from 'node:child_process'
import { promises as fsp, lstatSync, readlinkSync, mkdirSync, rmSync, symlinkSync } from 'node:fs'
import { join, posix } from 'node:path'

export const SANDBOX_HOME = '/home/user'
export const DEFAULT_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin'

export type ProcessEvent =
  | { kind: 'data'; stream: 'stdout' | 'stderr' | 'pty'; data: Uint8Array }
  | { kind: 'end'; exitCode: number; exited: boolean; status: string; error?: string }

export interface ProcessConfig {
  cmd: string
  args: string[]
  envs: Record<string, string>
  cwd?: string
}

/** A process running inside a sandbox, with its output fanned out to every attached stream. */
export class SandboxProcess {
  readonly listeners = new Set<(event: ProcessEvent) => void>()
  ended: Extract<ProcessEvent, { kind: 'end' }> | undefined
  constructor(
    readonly pid: number,
    readonly child: ChildProcess,
    readonly config: ProcessConfig,
    readonly tag: string | undefined,
  ) {}

  emit(event: ProcessEvent): void {
    if (event.kind === 'end') this.ended = event
    for (const listener of [...this.listeners]) listener(event)
  }

  /** Signals the whole process group (the bubblewrap leader and everything inside). */
  signal(signal: 'SIGTERM' | 'SIGKILL'): void {
    try {
      process.kill(-this.pid, signal)
    } catch {
      // already gone
    }
  }
}

export interface SandboxRecord {
  id: string
  templateId: string
  metadata: Record<string, string>
  envVars: Record<string, string>
  envdAccessToken: string
  startedAt: Date
  endAt: Date
  state: 'running' | 'paused'
  autoPause: boolean
}

export class StandinSandbox {
  readonly processes = new Map<number, SandboxProcess>()
  timer: NodeJS.Timeout | undefined
  /** Aborted when the sandbox is killed or paused: every open stream of it ends with it. */
  lifetime = new AbortController()

  constructor(
    readonly record: SandboxRecord,
    /** Host directory that is `/` inside the sandbox. */
    readonly root: string,
    private readonly bwrap: string,
  ) {
    mkdirSync(join(root, 'home/user'), { recursive: true })
    mkdirSync(join(root, 'tmp'), { recursive: true, mode: 0o1777 })
    // The root's own skeleton: mount points for the read-only system and the usual merged-/usr links.
    for (const dir of ['usr', 'etc', 'proc', 'dev']) mkdirSync(join(root, dir), { recursive: true })
    for (const name of ['bin', 'sbin', 'lib', 'lib64']) symlinkSync(`usr/${name}`, join(root, name))
  }

  /** Absolute sandbox path of `path` (relative paths are taken against the user's home). */
  sandboxPath(path: string): string {
    return posix.resolve(SANDBOX_HOME, path.startsWith('~/') ? path.slice(2) : path === '~' ? '.' : path)
  }

  /**
   * Host path of sandbox `path`, resolving symlinks as the sandbox would see them (an absolute
   * link target is taken against the sandbox root), so nothing resolves outside the root.
   * `followLast: false` keeps a final symlink itself.
   */
  hostPath(path: string, followLast = true): string {
    const parts = this.sandboxPath(path).split('/').filter(Boolean)
    const resolved: string[] = []
    let hops = 0
    while (parts.length > 0) {
      const part = parts.shift() as string
      if (part === '..') {
        resolved.pop()
        continue
      }
      if (part === '.') continue
      const candidate = join(this.root, ...resolved, part)
      const last = parts.length === 0
      let link: string | undefined
      if (!last || followLast) {
        try {
          if (lstatSync(candidate).isSymbolicLink()) link = readlinkSync(candidate)
        } catch {
          // missing: the rest is taken literally
        }
      }
      if (link === undefined) {
        resolved.push(part)
        continue
      }
      if (++hops > 40) throw Object.assign(new Error(`too many levels of symbolic links: ${path}`), { code: 'ELOOP' })
      if (link.startsWith('/')) resolved.length = 0
      parts.unshift(...link.split('/').filter(Boolean))
    }
    return join(this.root, ...resolved)
  }

  /** Starts `config` inside the sandbox root under bubblewrap, in its own process group. */
  start(config: ProcessConfig, stdin: boolean, tag: string | undefined): SandboxProcess {
    const cwd = this.sandboxPath(config.cwd || SANDBOX_HOME)
    const env: Record<string, string> = {
      PATH: DEFAULT_PATH,
      HOME: SANDBOX_HOME,
      USER: 'user',
      LANG: 'C.UTF-8',
      E2B_SANDBOX: 'true',
      E2B_SANDBOX_ID: this.record.id,
      ...this.record.envVars,
      ...config.envs,
    }
    const args = [
      '--die-with-parent',
      '--unshare-pid',
      '--unshare-ipc',
      '--unshare-uts',
      '--hostname',
      this.record.id,
      '--bind',
      this.root,
      '/',
      '--ro-bind',
      '/usr',
      '/usr',
      '--ro-bind',
      '/etc',
      '/etc',
      '--proc',
      '/proc',
      '--dev',
      '/dev',
      '--chdir',
      cwd,
      '--',
      config.cmd,
      ...config.args,
    ]
    const child = spawn(this.bwrap, args, { env, stdio: [stdin ? 'pipe' : 'ignore', 'pipe', 'pipe'], detached: true })
    const proc = new SandboxProcess(child.pid ?? -1, child, config, tag)
    if (child.pid !== undefined) this.processes.set(child.pid, proc)
    let exit: { code: number | null; signal: NodeJS.Signals | null } | undefined
    let open = 2
    const finish = () => {
      if (!exit || open > 0) return
      this.processes.delete(proc.pid)
      const { code, signal } = exit
      proc.emit(
        signal
          ? {
              kind: 'end',
              exitCode: -1,
              exited: false,
              status: `signal: ${signal === 'SIGKILL' ? 'killed' : signal === 'SIGTERM' ? 'terminated' : signal}`,
            }
          : { kind: 'end', exitCode: code ?? -1, exited: true, status: `exit status ${code}` },
      )
    }
    child.stdout?.on('data', (data: Buffer) =>
      proc.emit({ kind: 'data', stream: 'stdout', data: new Uint8Array(data) }),
    )
    child.stderr?.on('data', (data: Buffer) =>
      proc.emit({ kind: 'data', stream: 'stderr', data: new Uint8Array(data) }),
    )
    child.stdout?.on('close', () => {
      open--
      finish()
    })
    child.stderr?.on('close', () => {
      open--
      finish()
    })
    child.stdin?.on('error', () => {})
    child.on('error', (error) => {
      exit = { code: 127, signal: null }
      open = 0
      proc.emit({ kind: 'end', exitCode: 127, exited: false, status: 'error', error: error.message })
    })
    child.on('exit', (code, signal) => {
      exit = { code, signal }
      finish()
    })
    return proc
  }

  /** Ends every process and stream of the sandbox (kill, pause, expiry). */
  stop(): void {
    this.lifetime.abort()
    this.lifetime = new AbortController()
    for (const proc of this.processes.values()) proc.signal('SIGKILL')
    this.processes.clear()
    if (this.timer) clearTimeout(this.timer)
    this.timer = undefined
  }

  destroy(): void {
    this.stop()
    rmSync(this.root, { recursive: true, force: true })
  }
}

export async function exists(path: string): Promise<boolean> {
  try {
    await fsp.lstat(path)
    return true
  } catch {
    return false
  }
}
