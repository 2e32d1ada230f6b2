// Two real worlds in one Cordis app, composed in-process the way @dsh/bundle-web-worlds composes its
// rows: `local` (subprocess-local, sandbox-local with bubblewrap, bash-sandbox, fs-sandbox: this
// machine, confined) and `lab` (a second subprocess-local that scrubs DSH_WORLD_PROBE, sandbox-local
// with no runner, bash-local, fs-local: this machine, unconfined), each set mounted under isolated
// service names and handed to `ctx.worlds` by an `@dsh/workspace-worlds/export` plugin. The public
// seams are the routers. Which world served a call is read from what differs between the two sets:
// the shell spec's executor, the sandbox runner, whether an inherited variable survives the spawn,
// and whether a write outside the confined world's writable roots is refused.
import { existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Context, type Fiber } from 'cordis'
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest'
import BashLocalExecutor from '@dsh/bash-local'
import SandboxedBashExecutor from '@dsh/bash-sandbox'
import LocalFileSystem from '@dsh/fs-local'
import SandboxedFileSystem from '@dsh/fs-sandbox'
import LocalSandbox from '@dsh/sandbox-local'
import SandboxPolicyService from '@dsh/sandbox-policy'
import SessionStore from '@dsh/session'
import type { ShellSpec } from '@dsh/shell'
import JsonStorage from '@dsh/storage-json'
import { DEFAULT_SCRUB_DENY, decodeOutput } from '@dsh/subprocess'
import LocalSubprocessService from '@dsh/subprocess-local'
import ToolRegistry from '@dsh/tools'
import Workspaces from '@dsh/workspace'
import Worlds, { WorldError, type WorldServices } from '../src/index.ts'
import Export from '../src/export.ts'
import Routed from '../src/routed.ts'

vi.setConfig({ testTimeout: 30_000, hookTimeout: 30_000 })

const PROBE = 'DSH_WORLD_PROBE'
const SEAMS = ['subprocess', 'fs', 'shell', 'sandbox'] as const

let base: string
/** A workspace in the local world. */
let here: string
/** A workspace in the lab world. */
let there: string
/** A workspace in the local world inside `there` (added before it, so order alone would not pick it). */
let inner: string
/** No workspace: the default world's. */
let elsewhere: string
let temp: string
const previousProbe = process.env[PROBE]

beforeAll(() => {
  base = realpathSync(mkdtempSync(join(tmpdir(), 'dsh-worlds-')))
  here = join(base, 'here')
  there = join(base, 'there')
  inner = join(there, 'inner')
  elsewhere = join(base, 'elsewhere')
  temp = join(base, 'tmp')
  for (const dir of [here, inner, elsewhere, temp]) mkdirSync(dir, { recursive: true })
  writeFileSync(join(there, 'notes.txt'), 'lab notes\n')
  // Inherited by both worlds' processes; only the lab's subprocess provider scrubs it.
  process.env[PROBE] = 'inherited'
})
afterAll(() => {
  if (previousProbe === undefined) delete process.env[PROBE]
  else process.env[PROBE] = previousProbe
  rmSync(base, { recursive: true, force: true })
})

const cleanup: Array<() => unknown> = []
afterEach(async () => {
  for (const step of cleanup.splice(0).reverse()) await step()
})

/** A context whose four seams are private to one world (the `isolate:` of the bundle's rows). */
function isolated(root: Context, label: string): Context {
  let ctx = root
  for (const name of SEAMS) ctx = ctx.isolate(name, Symbol(`${name}@${label}`))
  return ctx
}

function ready(ctx: Context, names: string[]): Promise<void> {
  return new Promise((resolve) => ctx.inject(names, () => resolve()))
}

interface World {
  ctx: Context
  /** The export plugin: disposing it withdraws the world. */
  exported: Fiber<Context>
}

/** This machine, confined: the web-worlds bundle's `world-local` rows. */
async function localWorld(root: Context, name = 'local'): Promise<World> {
  const ctx = isolated(root, `world-${name}`)
  await ctx.plugin(LocalSubprocessService, {} as never)
  await ctx.plugin(LocalSandbox, { runner: 'bwrap', probeCache: false } as never)
  await ctx.plugin(SandboxedBashExecutor, {
    defaultTimeoutMs: 20_000,
    maxTimeoutMs: 30_000,
    killGraceMs: 200,
    spillDir: join(base, `spill-${name}`),
  } as never)
  await ctx.plugin(SandboxedFileSystem, { durable: false } as never)
  await ready(ctx, [...SEAMS])
  const exported = ctx.plugin(Export, { world: name, description: 'this machine, confined' })
  await exported
  return { ctx, exported }
}

/** This machine, unconfined, with its own process provider (the shape of the e2b world's rows). */
async function labWorld(root: Context): Promise<World> {
  const ctx = isolated(root, 'world-lab')
  await ctx.plugin(LocalSubprocessService, { scrub: { deny: [...DEFAULT_SCRUB_DENY, PROBE], allow: [] } } as never)
  await ctx.plugin(LocalSandbox, { runner: 'none', probeCache: false } as never)
  await ctx.plugin(BashLocalExecutor, {
    defaultTimeoutMs: 20_000,
    maxTimeoutMs: 30_000,
    killGraceMs: 200,
    spillDir: join(base, 'spill-lab'),
  } as never)
  await ctx.plugin(LocalFileSystem, { durable: false } as never)
  await ready(ctx, [...SEAMS])
  const exported = ctx.plugin(Export, { world: 'lab', description: 'this machine, unconfined' })
  await exported
  return { ctx, exported }
}

interface Host {
  ctx: Context
  local: World
  lab: World
}

/** The host: storage, workspaces, sessions, tools, the policy, `ctx.worlds`, the routers, both worlds. */
async function boot(options: { storage?: string } = {}): Promise<Host> {
  const ctx = new Context()
  const fibers: Fiber<Context>[] = []
  cleanup.push(async () => {
    for (const fiber of fibers.reverse()) await fiber.dispose()
  })
  const mount = async (plugin: unknown, config?: unknown) => {
    const fiber = ctx.plugin(plugin as never, config as never)
    fibers.push(fiber)
    await fiber
  }
  await mount(JsonStorage, { root: options.storage ?? mkdtempSync(join(base, 'storage-')) })
  await mount(Workspaces, {})
  await mount(SessionStore)
  await mount(ToolRegistry, {})
  // One policy for the host, as in the bundle (the local world's shell and files ask it).
  await mount(SandboxPolicyService, { tempDirs: [temp], fallbackRoot: here })
  await mount(Worlds, { default: 'local' })
  // Not awaited: the routers' plugin waits for the default world, provided below.
  fibers.push(ctx.plugin(Routed))
  await ready(ctx, ['workspaces', 'sessions', 'tools', 'sandboxPolicy', 'worlds'])
  const local = await localWorld(ctx)
  const lab = await labWorld(ctx)
  fibers.push(local.exported, lab.exported)
  await ready(ctx, [...SEAMS])
  return { ctx, local, lab }
}

/** Adds the three workspaces: `inner` (local) first, then `there` (lab) around it, then `here` (local). */
async function addWorkspaces(ctx: Context) {
  const add = async (path: string, world: string) => (await ctx.workspaces.create({ path, world })).workspace
  return { inner: await add(inner, 'local'), there: await add(there, 'lab'), here: await add(here, 'local') }
}

/** What a shell command run through the public seams saw: the executor and the probe variable. */
async function shellProbe(ctx: Context, cwd: string): Promise<{ executor: string; probe: string }> {
  const spec = await ctx.shell.resolve({ command: `printf %s "\${${PROBE}:-scrubbed}"`, cwd })
  const result = await ctx.shell.run(spec)
  return { executor: spec.executor, probe: result.output.head + result.output.tail }
}

/** What a process spawned through the public seam saw of the probe variable. */
async function spawnProbe(ctx: Context, cwd: string): Promise<string> {
  const handle = ctx.subprocess.spawn({
    file: 'sh',
    args: ['-c', `printf %s "\${${PROBE}:-scrubbed}"`],
    cwd,
    kill: { graceMs: 200 },
    retention: { maxBytes: 4096, headBytes: 1024, tailBytes: 1024 },
  })
  const exit = await handle.exited
  return decodeOutput(exit.output.merged!.head)
}

/** Registers a tool that reports the world its body runs in, through the public seams. */
function whereTool(ctx: Context): void {
  ctx.tools.register({
    name: 'where',
    description: 'Reports the world of the call.',
    parameters: { type: 'object', properties: {} },
    async execute(_args, call) {
      const { executor, probe } = await shellProbe(ctx, call.cwd)
      // A runner of none: no runner selected.
      const runner = (await ctx.sandbox.describe()).runner ?? 'none'
      return { content: JSON.stringify({ world: ctx.worlds.scoped(), executor, probe, runner }) }
    },
  })
}

let calls = 0
/** Runs the `where` tool for a session through the tool pipeline (its `tools/execute` listeners). */
async function where(ctx: Context, sessionId: string, cwd: string) {
  const result = await ctx.tools.execute(
    { callId: `call-${++calls}`, name: 'where', arguments: '{}' },
    { sessionId, cwd },
  )
  const block = result.message.content[0]
  if (result.error || block?.type !== 'text') throw new Error(`where: ${JSON.stringify(result)}`)
  return JSON.parse(block.text) as { world?: string; executor: string; probe: string; runner: string }
}

const LOCAL = { world: 'local', executor: 'bash-sandbox', probe: 'inherited', runner: 'bwrap' }
const LAB = { world: 'lab', executor: 'bash-local', probe: 'scrubbed', runner: 'none' }

describe('worlds: two sets of providers in one host', () => {
  it('lists a provided world for workspaces, accepts it in create, and withdraws it with its export', async () => {
    const { ctx, lab } = await boot()
    expect(ctx.worlds.names().sort()).toEqual(['lab', 'local'])
    expect(ctx.workspaces.worlds()).toEqual({
      worlds: [
        { name: 'local', description: 'this machine' },
        { name: 'lab', description: 'this machine, unconfined' },
      ],
      default: 'local',
    })
    const { workspace } = await ctx.workspaces.create({ path: there, world: 'lab' })
    expect(workspace.world).toBe('lab')
    // Unloading the export row takes the world away from the picker and from the routers.
    await lab.exported.dispose()
    expect(ctx.workspaces.worlds().worlds.map((w) => w.name)).toEqual(['local'])
    expect(ctx.worlds.names()).toEqual(['local'])
    await expect(ctx.workspaces.create({ path: elsewhere, world: 'lab' })).rejects.toThrow(
      'world: unknown world "lab" (known: local)',
    )
    // The folder still says `lab`: its calls are refused in one sentence, not sent to another world.
    expect(() => ctx.worlds.route(join(there, 'notes.txt'), undefined, () => 'reached')).toThrow(
      new WorldError('the world "lab" is not available on this host (available: local)'),
    )
  })

  it('offers worlds provided before the workspace service came up', async () => {
    const ctx = new Context()
    const fibers: Fiber<Context>[] = []
    cleanup.push(async () => {
      for (const fiber of fibers.reverse()) await fiber.dispose()
    })
    fibers.push(ctx.plugin(SessionStore), ctx.plugin(Worlds, { default: 'lab' }))
    await ready(ctx, ['worlds'])
    const lab = await labWorld(ctx)
    fibers.push(lab.exported)
    fibers.push(ctx.plugin(JsonStorage, { root: mkdtempSync(join(base, 'storage-')) }), ctx.plugin(Workspaces, {}))
    await ready(ctx, ['workspaces'])
    // Offered as the host default too (`default: lab`).
    expect(ctx.workspaces.worlds()).toEqual({
      worlds: [
        { name: 'local', description: 'this machine' },
        { name: 'lab', description: 'this machine, unconfined' },
      ],
      default: 'lab',
    })
  })

  it('names the missing world and the provided ones in one sentence', async () => {
    const ctx = new Context()
    const fibers: Fiber<Context>[] = []
    cleanup.push(async () => {
      for (const fiber of fibers.reverse()) await fiber.dispose()
    })
    fibers.push(ctx.plugin(SandboxPolicyService, { tempDirs: [temp] }), ctx.plugin(Worlds, { default: 'mars' }))
    await ready(ctx, ['worlds', 'sandboxPolicy'])
    const local = await localWorld(ctx)
    const lab = await labWorld(ctx)
    fibers.push(local.exported, lab.exported)
    const error = (() => {
      try {
        ctx.worlds.within(undefined, elsewhere, () => 'reached')
      } catch (caught) {
        return caught
      }
    })()
    expect(error).toBeInstanceOf(WorldError)
    expect(error).toMatchObject({
      code: 'UNKNOWN_WORLD',
      message: 'the world "mars" is not available on this host (available: local, lab)',
    })
    expect(() => ctx.worlds.current()).toThrow('the world "mars" is not available on this host (available: local, lab)')
  })

  it('runs a session in the world of its deepest workspace folder, else the default, pinned at first sight', async () => {
    const { ctx } = await boot()
    whereTool(ctx)
    const ws = await addWorkspaces(ctx)
    const sessions = {
      here: ctx.sessions.create({ cwd: here }),
      there: ctx.sessions.create({ cwd: join(there, 'sub') }),
      inner: ctx.sessions.create({ cwd: join(inner, 'deeper') }),
      elsewhere: ctx.sessions.create({ cwd: elsewhere }),
    }
    expect(await where(ctx, sessions.here.id, here)).toEqual(LOCAL)
    expect(await where(ctx, sessions.there.id, there)).toEqual(LAB)
    // `inner` lies in `there` (lab) but is a workspace of its own (local): the deepest folder wins.
    expect(await where(ctx, sessions.inner.id, inner)).toEqual(LOCAL)
    // Not a workspace: the host default.
    expect(await where(ctx, sessions.elsewhere.id, elsewhere)).toEqual(LOCAL)

    // Moving the folder to the other world does not move the live session; a new one goes there.
    await ctx.workspaces.remove(ws.there.id)
    await ctx.workspaces.create({ path: there, world: 'local' })
    expect(await where(ctx, sessions.there.id, there)).toEqual(LAB)
    const fresh = ctx.sessions.create({ cwd: there })
    expect(await where(ctx, fresh.id, there)).toEqual(LOCAL)
    // And the other way round.
    await ctx.workspaces.remove(ws.here.id)
    await ctx.workspaces.create({ path: here, world: 'lab' })
    expect(await where(ctx, sessions.here.id, here)).toEqual(LOCAL)
    expect(ctx.worlds.worldOfSession(ctx.sessions.create({ cwd: here }).id, here)).toBe('lab')
    // Outside the tool call no world is in scope.
    expect(ctx.worlds.scoped()).toBeUndefined()
  })

  it('routes calls outside a session by path or cwd, and an fs call that names its session to its world', async () => {
    const { ctx } = await boot()
    await addWorkspaces(ctx)
    // Processes and shell commands: by working directory.
    expect(await spawnProbe(ctx, there)).toBe('scrubbed')
    expect(await spawnProbe(ctx, inner)).toBe('inherited')
    expect(await spawnProbe(ctx, here)).toBe('inherited')
    expect(await spawnProbe(ctx, elsewhere)).toBe('inherited')
    expect(await shellProbe(ctx, there)).toEqual({ executor: 'bash-local', probe: 'scrubbed' })
    expect(await shellProbe(ctx, elsewhere)).toEqual({ executor: 'bash-sandbox', probe: 'inherited' })
    // Outside any session the sandbox answers for the default world.
    expect((await ctx.sandbox.describe()).runner).toBe('bwrap')

    // Files: by path. The confined world refuses a write outside its writable roots (`here`, the
    // temp dir); the lab world writes wherever its path lies.
    await ctx.fs.writeFile(join(there, 'a.txt'), 'lab\n')
    expect(readFileSync(join(there, 'a.txt'), 'utf8')).toBe('lab\n')
    await expect(ctx.fs.writeFile(join(inner, 'a.txt'), 'local\n')).rejects.toMatchObject({ code: 'SANDBOX_DENIED' })
    await expect(ctx.fs.writeFile(join(elsewhere, 'a.txt'), 'local\n')).rejects.toMatchObject({
      code: 'SANDBOX_DENIED',
    })
    expect(existsSync(join(inner, 'a.txt')) || existsSync(join(elsewhere, 'a.txt'))).toBe(false)
    expect((await ctx.fs.readText(join(there, 'notes.txt'))).text).toBe('lab notes\n')

    // An fs call that names its session goes to that session's world, wherever the path lies.
    const labSession = ctx.sessions.create({ cwd: there })
    const localSession = ctx.sessions.create({ cwd: here })
    await ctx.fs.writeFile(join(elsewhere, 'b.txt'), 'lab\n', { session: labSession.id })
    expect(readFileSync(join(elsewhere, 'b.txt'), 'utf8')).toBe('lab\n')
    await expect(ctx.fs.writeFile(join(there, 'b.txt'), 'local\n', { session: localSession.id })).rejects.toMatchObject(
      { code: 'SANDBOX_DENIED' },
    )
    expect(existsSync(join(there, 'b.txt'))).toBe(false)
  })

  it('refuses in one world a shell spec resolved in the other (FOREIGN_SPEC)', async () => {
    const { ctx } = await boot()
    await addWorkspaces(ctx)
    const localSpec: ShellSpec = await ctx.shell.resolve({ command: 'echo local', cwd: here })
    const labSpec: ShellSpec = await ctx.shell.resolve({ command: 'echo lab', cwd: there })
    expect([localSpec.executor, labSpec.executor]).toEqual(['bash-sandbox', 'bash-local'])
    const labSession = ctx.sessions.create({ cwd: there })
    const localSession = ctx.sessions.create({ cwd: here })
    // Run inside the other world's session scope: the spec goes to that world's executor whole.
    await expect(ctx.worlds.within(labSession.id, there, () => ctx.shell.run(localSpec))).rejects.toMatchObject({
      code: 'FOREIGN_SPEC',
    })
    await expect(ctx.worlds.within(localSession.id, here, () => ctx.shell.run(labSpec))).rejects.toMatchObject({
      code: 'FOREIGN_SPEC',
    })
    // In its own world it runs.
    const ran = await ctx.worlds.within(localSession.id, here, () => ctx.shell.run(localSpec))
    expect(ran.output.head).toBe('local\n')
  })

  it('mounts the routers only once the default world is provided', async () => {
    const ctx = new Context()
    const fibers: Fiber<Context>[] = []
    cleanup.push(async () => {
      for (const fiber of fibers.reverse()) await fiber.dispose()
    })
    fibers.push(ctx.plugin(SessionStore), ctx.plugin(SandboxPolicyService, { tempDirs: [temp], fallbackRoot: here }))
    fibers.push(ctx.plugin(Worlds, { default: 'local' }))
    await ready(ctx, ['worlds', 'sandboxPolicy'])
    const routed = ctx.plugin(Routed)
    fibers.push(routed)
    // Another world is not enough.
    const lab = await labWorld(ctx)
    fibers.push(lab.exported)
    await ctx.worlds.provided('lab')
    for (const seam of SEAMS) expect(ctx.get(seam), seam).toBeUndefined()
    // The default world arrives: the four seams appear, and answer for it.
    const local = await localWorld(ctx)
    fibers.push(local.exported)
    await routed
    await ready(ctx, [...SEAMS])
    expect(await shellProbe(ctx, elsewhere)).toEqual({ executor: 'bash-sandbox', probe: 'inherited' })
  })
})

describe('worlds: per-folder state and claims', () => {
  it('enters the folder of the call, and a claiming world takes a call whatever its folder says', async () => {
    const { ctx, lab } = await boot()
    await addWorkspaces(ctx)
    const services = Object.fromEntries(SEAMS.map((seam) => [seam, lab.ctx.get(seam)])) as unknown as WorldServices
    const entered: string[] = []
    let claiming = false
    ctx.effect(() =>
      ctx.worlds.provide({
        name: 'folded',
        description: 'one state per folder',
        services,
        enter: (folder, fn) => (entered.push(folder), fn()),
        claims: () => claiming,
      }),
    )
    const { workspace } = await ctx.workspaces.create({ path: elsewhere, world: 'folded' })
    // A harness call by path: the folder of the path is entered, not its own directory.
    expect(await spawnProbe(ctx, elsewhere)).toBe('scrubbed')
    mkdirSync(join(elsewhere, 'deep', 'er'), { recursive: true })
    expect(await spawnProbe(ctx, join(elsewhere, 'deep', 'er'))).toBe('scrubbed')
    expect(entered).toEqual([workspace.path, workspace.path])
    // A session of the folder: its steps and tool calls enter the same folder.
    const session = ctx.sessions.create({ cwd: join(elsewhere, 'deep') })
    expect(ctx.worlds.within(session.id, session.cwd, () => ctx.worlds.scoped())).toBe('folded')
    expect(entered.at(-1)).toBe(workspace.path)
    // A claiming world takes a session of a local folder.
    const localSession = ctx.sessions.create({ cwd: here })
    expect(ctx.worlds.within(localSession.id, here, () => ctx.worlds.scoped())).toBe('local')
    claiming = true
    expect(ctx.worlds.within(localSession.id, here, () => ctx.worlds.scoped())).toBe('folded')
    expect(entered.at(-1)).toBe(here)
  })
})
