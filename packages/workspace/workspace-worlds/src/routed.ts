// The public seams of a host whose worlds are chosen per workspace: `subprocess`, `fs`, `shell` and
// `sandbox` providers that hold no state of their own and pass each call to the provider of the
// calling session's world (`ctx.worlds.route()`). A call carries on in the one world it was routed
// to (a shell spec resolved in one world is refused by another's executor), so nothing a local
// session starts reaches the sandbox and nothing an e2b session starts runs on this machine.
import type { Context } from 'cordis'
import {
  FileSystem,
  type CommitOptions,
  type DirEntry,
  type EditResult,
  type EditTransform,
  type FileStat,
  type FsCallOptions,
  type ReadResult,
  type ReadTextResult,
  type RemoveOptions,
  type WriteOptions,
  type WriteResult,
} from '@dsh/fs'
import {
  SandboxService,
  type SandboxInvocation,
  type SandboxOutcome,
  type SandboxRunnerInfo,
  type SandboxWrapRequest,
} from '@dsh/sandbox'
import { ShellExecutor, type ShellRequest, type ShellRunOptions, type ShellSpec, type ShellResult } from '@dsh/shell'
import {
  SubprocessService,
  type ProcessHandle,
  type ScrubPolicy,
  type SpawnSpec,
  type TerminalHandle,
  type TerminalSpawnSpec,
} from '@dsh/subprocess'
import type { WorldsService } from './index.ts'

export class RoutedSubprocess extends SubprocessService {
  static inject = ['worlds']
  private readonly worlds: WorldsService
  constructor(ctx: Context) {
    super(ctx)
    this.worlds = ctx.worlds
  }
  spawn(spec: SpawnSpec): ProcessHandle {
    return this.worlds.route(spec.cwd, undefined, (w) => w.subprocess.spawn(spec))
  }
  spawnTerminal(spec: TerminalSpawnSpec): TerminalHandle {
    return this.worlds.route(spec.cwd, undefined, (w) => w.subprocess.spawnTerminal(spec))
  }
  get scrubPolicy(): ScrubPolicy {
    return this.worlds.current().subprocess.scrubPolicy
  }
}

export class RoutedShell extends ShellExecutor {
  static inject = ['worlds']
  private readonly worlds: WorldsService
  constructor(ctx: Context) {
    super(ctx)
    this.worlds = ctx.worlds
  }
  get dialect(): string {
    return this.worlds.current().shell.dialect
  }
  get limits(): ShellExecutor['limits'] {
    return this.worlds.current().shell.limits
  }
  resolve(request: ShellRequest): Promise<ShellSpec> {
    return this.worlds.route(request.cwd, undefined, (w) => w.shell.resolve(request))
  }
  /** The executor of the calling world runs it; a spec another world resolved is its FOREIGN_SPEC. */
  run(spec: ShellSpec, options?: ShellRunOptions): Promise<ShellResult> {
    return this.worlds.route(spec.cwd, undefined, (w) => w.shell.run(spec, options))
  }
}

export class RoutedSandbox extends SandboxService {
  static inject = ['worlds']
  private readonly worlds: WorldsService
  constructor(ctx: Context) {
    super(ctx)
    this.worlds = ctx.worlds
    // The base class declares a plain field; the calling world's sentence is read at each access.
    const worlds = this.worlds
    Object.defineProperty(this, 'confinement', { get: () => worlds.current().sandbox.confinement })
  }
  describe(): Promise<SandboxRunnerInfo> {
    return this.worlds.current().sandbox.describe()
  }
  wrap(request: SandboxWrapRequest): Promise<SandboxInvocation> {
    return this.worlds.route(request.cwd, undefined, (w) => w.sandbox.wrap(request))
  }
  override detectDenial(outcome: SandboxOutcome) {
    return this.worlds.current().sandbox.detectDenial(outcome)
  }
}

/**
 * The file seam: every public call goes to the world's provider whole (its lock, its
 * `fs/before-write` gate and its events), so this class never touches a file itself.
 */
export class RoutedFileSystem extends FileSystem {
  static inject = ['worlds']
  private readonly worlds: WorldsService
  constructor(ctx: Context) {
    super(ctx)
    this.worlds = ctx.worlds
  }
  /** Runs one call with the file provider of its world (the session it names, else its path's). */
  private pick<T>(path: string, options: FsCallOptions | undefined, fn: (fs: FileSystem) => T): T {
    return this.worlds.route(path, options?.session, (w) => fn(w.fs))
  }
  override resolve(path: string, cwd?: string): string {
    return this.worlds.current().fs.resolve(path, cwd)
  }
  override stat(path: string): Promise<FileStat> {
    return this.pick(path, undefined, (fs) => fs.stat(path))
  }
  override exists(path: string): Promise<boolean> {
    return this.pick(path, undefined, (fs) => fs.exists(path))
  }
  override readFile(path: string, options?: FsCallOptions): Promise<ReadResult> {
    return this.pick(path, options, (fs) => fs.readFile(path, options))
  }
  override readText(path: string, options?: FsCallOptions): Promise<ReadTextResult> {
    return this.pick(path, options, (fs) => fs.readText(path, options))
  }
  override writeFile(path: string, data: string | Uint8Array, options?: WriteOptions): Promise<WriteResult> {
    return this.pick(path, options, (fs) => fs.writeFile(path, data, options))
  }
  override edit(path: string, transform: EditTransform, options?: FsCallOptions): Promise<EditResult> {
    return this.pick(path, options, (fs) => fs.edit(path, transform, options))
  }
  override list(path: string): Promise<DirEntry[]> {
    return this.pick(path, undefined, (fs) => fs.list(path))
  }
  override readdir(path: string): Promise<DirEntry[]> {
    return this.pick(path, undefined, (fs) => fs.readdir(path))
  }
  override mkdir(path: string, options?: { recursive?: boolean }): Promise<void> {
    return this.pick(path, undefined, (fs) => fs.mkdir(path, options))
  }
  override remove(path: string, options?: RemoveOptions): Promise<void> {
    return this.pick(path, options, (fs) => fs.remove(path, options))
  }
  // The primitives are never reached: every public call above goes to a world's provider.
  protected statPath(): Promise<FileStat | undefined> {
    return Promise.reject(new Error('RoutedFileSystem: primitives are served by the world providers'))
  }
  protected readBytes(): Promise<Uint8Array> {
    return this.statPath() as never
  }
  protected commitBytes(_path: string, _data: Uint8Array, _options: CommitOptions): Promise<FileStat> {
    return this.statPath() as never
  }
  protected listDir(): Promise<DirEntry[]> {
    return this.statPath() as never
  }
  protected makeDir(): Promise<void> {
    return this.statPath() as never
  }
  protected removePath(): Promise<void> {
    return this.statPath() as never
  }
}

export const name = 'workspace-worlds-routed'

/**
 * Mounts the four routed seams (the `subprocess` row of a per-workspace host) once the default
 * world is provided, so a consumer that reads a seam while it loads (tool-bash asks the shell's
 * limits) finds a world to answer.
 */
export async function apply(ctx: Context): Promise<void> {
  const wanted = ctx.worlds.config.default
  const timer = setTimeout(
    () =>
      ctx
        .logger('worlds')
        .error(
          'the default world "%s" is not provided after 30 s (provided: %s); the subprocess, fs, shell and sandbox seams wait for it',
          wanted,
          ctx.worlds.names().join(', ') || 'none',
        ),
    30_000,
  )
  timer.unref?.()
  await ctx.worlds.provided(wanted)
  clearTimeout(timer)
  ctx.plugin(RoutedSubprocess)
  ctx.plugin(RoutedFileSystem)
  ctx.plugin(RoutedShell)
  ctx.plugin(RoutedSandbox)
}

export const inject = ['worlds']
export default { name, inject, apply }
