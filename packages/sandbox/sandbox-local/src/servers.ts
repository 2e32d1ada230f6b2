// Spawn servers: one confined server per policy (a bwrap sandbox, or behind the Landlock helper)
// that starts each command of that policy, so a command does not pay the runner's start.
import { statSync } from 'node:fs'
import { SpawnServer, spawnServerUnavailable } from '@dsh/posix-spawn'
import type { LaunchedChild, ProcessLauncher } from '@dsh/subprocess'

/** How to start a policy's spawn server, and what its confinement captured when it started. */
export interface ServerStart {
  /** What runs in front of the server (`bwrap <flags> --`, or `[unshare ... --] node helper <spec> --`). */
  prefix: string[]
  /** Only where the prefix gives the server a PID namespace of its own. */
  sweep: boolean
  /** `captured()` of the paths the prefix binds or grants by inode. */
  captured: string
}

/**
 * What a server's confinement took from the filesystem when it started: bind mounts and Landlock
 * rules hold the inode a path named then, and Landlock's hidden-path rules list the entries of
 * the directories on the way. A path replaced since (a workspace deleted and made again) or a
 * directory whose entries changed needs a new server, as a runner per command would see the new
 * state. Cheap: one stat per path.
 */
export function captured(paths: readonly string[], listed: readonly string[]): string {
  const identity = (path: string, withTime: boolean): string => {
    try {
      const st = statSync(path, { bigint: true })
      // The birth time tells a new directory from an old one that had the same inode number.
      return `${st.dev}:${st.ino}:${st.birthtimeNs}${withTime ? `:${st.mtimeNs}` : ''}`
    } catch {
      return '-'
    }
  }
  return [...paths.map((path) => identity(path, false)), ...listed.map((dir) => identity(dir, true))].join(',')
}

/** The running servers of one sandbox service, keyed by how they were started. */
export class SpawnServerPool {
  /** Running spawn servers by key, least recently used first. */
  private readonly servers = new Map<string, SpawnServer>()
  /** Servers (by key) whose start failed or that ended twice on their own, with why: those use the argv. */
  readonly failed = new Map<string, string>()
  /** How often each key's server ended on its own. */
  private readonly ends = new Map<string, number>()
  /** Why spawn servers are not used at all here (not built, not Linux), once known. */
  fallback: string | undefined
  private checked = false
  private disposed = false

  constructor(
    /** How many servers may run at once. */
    private readonly limit: () => number,
    /** Called when a server does not come up (the stored probe result may be out of date). */
    private readonly onStartFailure: () => void,
  ) {}

  /**
   * Starts `argv` in `cwd` through the spawn server of `start`, started (and awaited) at the first
   * wrap of that policy. A server that does not come up (bwrap refused a flag) is not tried again
   * for the policy: its commands run as a runner per command, which reports the runner's own error.
   */
  async launcherFor(
    start: ServerStart,
    argv: string[],
    cwd: string,
    merge: boolean,
  ): Promise<ProcessLauncher | undefined> {
    if (!this.checked) {
      this.checked = true
      this.fallback = spawnServerUnavailable()
    }
    if (this.fallback !== undefined) return undefined
    const key = [...start.prefix, start.sweep ? '--sweep' : '', start.captured].join('\0')
    if (this.failed.has(key)) return undefined
    const server = this.serverFor(key, start)
    if (!server) return undefined
    if (!(await server.ready)) {
      // Perhaps the stored probe result trusted without a probe is out of date: verify it now.
      this.onStartFailure()
      this.failed.set(key, server.closeReason ?? 'the spawn server ended at start')
      if (this.servers.get(key) === server) this.servers.delete(key)
      return undefined
    }
    return {
      // A server that died since (it is replaced at the next wrap) leaves this command to argv.
      launch: ({ env, stdinPipe }) =>
        server.closed
          ? undefined
          : (server.spawn(argv[0]!, argv.slice(1), { cwd, env, stdinPipe, mergeStderr: merge }) as LaunchedChild),
    }
  }

  private serverFor(key: string, start: ServerStart): SpawnServer | undefined {
    if (this.disposed) return undefined
    let server = this.servers.get(key)
    if (server) this.servers.delete(key)
    if (server?.closed) {
      // It ended on its own (servers this side ends leave the map): started again once; a second
      // end leaves the policy to the confined argv (a runner per command), which says what fails.
      const ended = (this.ends.get(key) ?? 0) + 1
      this.ends.set(key, ended)
      if (ended > 1) {
        this.failed.set(key, `the spawn server ended twice${server.closeReason ? `: ${server.closeReason}` : ''}`)
        return undefined
      }
      server = undefined
    }
    if (!server) {
      try {
        server = new SpawnServer({
          prefix: start.prefix,
          env: { PATH: process.env.PATH ?? '/usr/bin:/bin' },
          sweep: start.sweep,
        })
      } catch (error) {
        this.fallback = (error as Error).message
        return undefined
      }
    }
    this.servers.set(key, server)
    // Over the limit: end the least recently used servers that run nothing.
    const limit = this.limit()
    for (const [other, candidate] of this.servers) {
      if (this.servers.size <= limit) break
      if (candidate === server || candidate.running > 0) continue
      candidate.close()
      this.servers.delete(other)
    }
    return server
  }

  /** Spawn servers running now. */
  get running(): number {
    return [...this.servers.values()].filter((server) => !server.closed).length
  }

  /** Ends every server (a new one starts at the next wrap). */
  closeAll(): void {
    for (const server of this.servers.values()) server.close()
    this.servers.clear()
  }

  /** Ends every server for good (the plugin unloads). */
  dispose(): void {
    this.disposed = true
    this.closeAll()
  }
}
