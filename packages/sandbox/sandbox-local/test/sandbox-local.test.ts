import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { spawn } from 'node:child_process'
import { execFileSync, spawnSync } from 'node:child_process'
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  readlinkSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs'
import { createServer, type Server } from 'node:net'
import { homedir, tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { Context } from 'cordis'
import { isSandboxError, type SandboxInvocation, type SandboxMode, type SandboxPolicy } from '@dsh/sandbox'
import HomePaths from '@dsh/home-paths'
import { projectControlPaths } from '@dsh/sandbox-policy'
import { spawnServerUnavailable } from '@dsh/posix-spawn'
import LocalSandbox, {
  LANDLOCK_CONTROL_NOTE,
  LANDLOCK_HELPER,
  LANDLOCK_NOTE,
  NO_PID_NAMESPACE_NOTE,
  PID_NAMESPACE_NOTE,
  type RunnerChoice,
} from '../src/index.ts'

/**
 * Spawn servers need the posix_spawn add-on, which only loads on the main thread: under Stryker's
 * vitest runner (worker threads) none can start and wrap() falls back to the argv, as in
 * service.test.ts. In the normal run this is false and every assertion below holds as written.
 */
const noServers = spawnServerUnavailable() !== undefined

let base: string
let ws: string
let temp: string
let outside: string
let server: Server
let port: number

beforeAll(async () => {
  base = mkdtempSync(join(tmpdir(), 'dsh-sandbox-local-'))
  ws = join(base, 'ws')
  temp = join(base, 'tmp')
  outside = join(base, 'outside')
  for (const dir of [ws, temp, outside]) mkdirSync(dir)
  symlinkSync(outside, join(ws, 'escape'))
  server = createServer((socket) => socket.end('hello\n'))
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  port = (server.address() as { port: number }).port
})

afterAll(() => {
  server.close()
  spawnSync('ip', ['addr', 'del', `${PROBE_ADDRESS}/32`, 'dev', 'lo'], { stdio: 'ignore' })
  for (const pid of survivors()) process.kill(pid, 'SIGKILL')
  rmSync(base, { recursive: true, force: true })
})

function policy(mode: SandboxMode, network = false, extra: Partial<SandboxPolicy> = {}): SandboxPolicy {
  return {
    mode,
    workspaceRoot: ws,
    writableRoots: mode === 'workspace-write' ? [ws, temp] : [],
    network: mode === 'danger-full-access' ? true : network,
    ...extra,
  }
}

/** An address no test machine uses; a command that can add it to `lo` holds CAP_NET_ADMIN. */
const PROBE_ADDRESS = '127.77.0.9'
/** A unique `sleep` argument marks processes a command tried to leave behind. */
const SURVIVOR = `4321.${process.pid}`

function survivors(): number[] {
  const found: number[] = []
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue
    try {
      const [file, arg] = readFileSync(`/proc/${entry}/cmdline`, 'latin1').split('\0')
      if (file.endsWith('sleep') && arg === SURVIVOR) found.push(Number(entry))
    } catch {}
  }
  return found
}

async function sandbox(runner: RunnerChoice, extra: Record<string, unknown> = {}): Promise<LocalSandbox> {
  const ctx = new Context()
  await ctx.plugin(LocalSandbox, { runner, ...extra })
  return ctx.sandbox as LocalSandbox
}

function run(invocation: SandboxInvocation, cwd = ws): Promise<{ code: number; output: string }> {
  const env = { PATH: '/usr/local/bin:/usr/bin:/bin', HOME: homedir() }
  const launched = invocation.launcher?.launch({ env, stdinPipe: false })
  if (launched) {
    // The spawn server started it (in the invocation's cwd): the same command in the same sandbox.
    let output = ''
    launched.stdout!.on('data', (chunk) => (output += chunk))
    launched.stderr?.on('data', (chunk) => (output += chunk))
    return new Promise((resolve) => {
      launched.once('error', (error) => resolve({ code: -1, output: `${output}${error.message}` }))
      launched.once('close', (code, signal) => resolve({ code: code ?? (signal ? 128 : -1), output }))
    })
  }
  const [file, ...args] = invocation.argv
  // stdin must not be a socket: bash sources ~/.bashrc when it thinks rshd started it.
  const child = spawn(file, args, {
    cwd,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { PATH: '/usr/local/bin:/usr/bin:/bin', HOME: homedir() },
  })
  let output = ''
  child.stdout.on('data', (chunk) => (output += chunk))
  child.stderr.on('data', (chunk) => (output += chunk))
  return new Promise((resolve) => child.on('close', (code) => resolve({ code: code ?? -1, output })))
}

async function bash(
  service: LocalSandbox,
  mode: SandboxMode,
  script: string,
  network = false,
  extra: Partial<SandboxPolicy> = {},
) {
  const invocation = await service.wrap({ argv: ['bash', '-c', script], cwd: ws, policy: policy(mode, network, extra) })
  return { invocation, ...(await run(invocation)) }
}

/** Runs the confined argv under an unconfined `sh` that holds a secret in its environment (the harness's role). */
function runUnderSecretParent(invocation: SandboxInvocation): { output: string } {
  const quoted = invocation.argv.map((arg) => `'${arg.replace(/'/g, `'\\''`)}'`).join(' ')
  const result = spawnSync('/bin/sh', ['-c', `OUTER=$$ ${quoted}; true`], {
    cwd: ws,
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { PATH: '/usr/local/bin:/usr/bin:/bin', HOME: homedir(), DSH_PARENT_SECRET: 'parent-secret-value' },
  })
  return { output: `${result.stdout}${result.stderr}` }
}

const probes = new Map<string, string | undefined>()
for (const runner of ['bwrap', 'landlock'] as const) {
  const service = new LocalSandbox(new Context(), {
    runner,
    bwrap: 'bwrap',
    node: process.execPath,
    unshare: 'unshare',
    probeTimeoutMs: 5000,
  })
  const info = await service.describe()
  probes.set(
    runner,
    info.runner === runner ? undefined : info.rejected.map((r) => `${r.runner}: ${r.reason}`).join('; '),
  )
  if (info.runner !== runner) console.warn(`[sandbox-local] skipping the ${runner} tests: ${probes.get(runner)}`)
}

const variants = [
  { name: 'bwrap, a bwrap per command', runner: 'bwrap', config: { spawnServer: false } },
  { name: 'bwrap, through its spawn server', runner: 'bwrap', config: {} },
  { name: 'landlock, a helper per command', runner: 'landlock', config: { spawnServer: false } },
  { name: 'landlock, through its spawn server', runner: 'landlock', config: {} },
] as const

describe.each(variants)('$name (forced)', ({ runner, config }) => {
  const skip = probes.get(runner) !== undefined
  const viaServer = !('spawnServer' in config)
  let service: LocalSandbox
  beforeAll(async () => {
    if (!skip) service = await sandbox(runner, config)
  })

  it.skipIf(skip)('reports itself as the selected runner', async () => {
    expect(await service.describe()).toMatchObject({ runner, rejected: [] })
    // The variant runs what it says: a launcher only with the spawn server (none can start where
    // the add-on does not load, and wrap() then hands back the argv).
    const invocation = await service.wrap({ argv: ['true'], cwd: ws, policy: policy('workspace-write') })
    expect(invocation.launcher !== undefined).toBe(viaServer && !noServers)
  })

  it.skipIf(skip)('workspace-write: writing inside the workspace and the temp dir works', async () => {
    const result = await bash(
      service,
      'workspace-write',
      `echo inside > ${ws}/${runner}.txt && echo t > ${temp}/${runner}.txt && mkdir -p sub/deep && rm ${ws}/${runner}.txt && echo ok`,
    )
    expect(result.output).toBe('ok\n')
    expect(result.code).toBe(0)
    expect(result.invocation).toMatchObject({ runner, enforcement: 'enforced', mode: 'workspace-write' })
    expect(readFileSync(join(temp, `${runner}.txt`), 'utf8')).toBe('t\n')
  })

  it.skipIf(skip)('workspace-write: $HOME, /etc, a .. escape and a symlink escape are denied; reads work', async () => {
    const tag = viaServer ? `${runner}-server` : runner
    const home = join(homedir(), `.dsh-sandbox-probe-${tag}`)
    const script = [
      `echo x > ${home} || echo home-denied`,
      `echo x > /etc/dsh-sandbox-probe-${tag} || echo etc-denied`,
      `echo x > ../outside/dotdot || echo dotdot-denied`,
      `echo x > escape/link || echo link-denied`,
      `ln -s /etc ${ws}/etc-link-${tag} && (echo x > ${ws}/etc-link-${tag}/dsh-probe || echo link2-denied)`,
      'head -c 4 /etc/hostname > /dev/null && echo read-ok',
    ].join('; ')
    const result = await bash(service, 'workspace-write', script)
    for (const word of ['home-denied', 'etc-denied', 'dotdot-denied', 'link-denied', 'link2-denied', 'read-ok'])
      expect(result.output).toContain(word)
    expect(existsSync(home)).toBe(false)
    expect(existsSync(`/etc/dsh-sandbox-probe-${tag}`)).toBe(false)
    expect(existsSync(join(outside, 'dotdot'))).toBe(false)
    expect(existsSync(join(outside, 'link'))).toBe(false)
    expect(
      service.detectDenial({
        exitCode: 1,
        output: `bash: ${home}: Read-only file system`,
        invocation: result.invocation,
      }),
    ).toMatchObject({ kind: 'filesystem' })
  })

  it.skipIf(skip)('network is off: a connect to a local listener fails; allowed when the policy says so', async () => {
    const probe = `exec 3<>/dev/tcp/127.0.0.1/${port} && head -1 <&3`
    const off = await bash(service, 'workspace-write', probe)
    expect(off.code).not.toBe(0)
    expect(off.output).not.toContain('hello')
    const on = await bash(service, 'workspace-write', probe, true)
    expect(on.output).toBe('hello\n')
  })

  it.skipIf(skip)('read-only denies every write, the workspace included', async () => {
    const result = await bash(
      service,
      'read-only',
      `echo x > ${ws}/ro || echo ws-denied; echo x > ${temp}/ro || echo tmp-denied; echo fine > /dev/null && echo devnull-ok`,
    )
    expect(result.output).toContain('ws-denied')
    expect(result.output).toContain('tmp-denied')
    expect(result.output).toContain('devnull-ok')
    expect(existsSync(join(ws, 'ro'))).toBe(false)
  })

  it.skipIf(skip)('children and background processes stay confined', async () => {
    const script = `sh -c 'echo x > ${outside}/child' ; (sleep 0.05; echo x > ${outside}/bg) & wait; python3 -c "open('${outside}/py','w')" 2>/dev/null; echo done`
    const result = await bash(service, 'workspace-write', script)
    expect(result.output).toContain('done')
    for (const name of ['child', 'bg', 'py']) expect(existsSync(join(outside, name))).toBe(false)
  })

  it.skipIf(skip || process.getuid?.() !== 0)(
    "as root: no mknod of a block device, no ip addr add, no reading the parent's environ",
    async () => {
      const script = [
        `mknod ${temp}/blk-${runner} b 8 0 && echo mknod-worked`,
        `ip addr add ${PROBE_ADDRESS}/32 dev lo && echo ip-worked`,
        'tr "\\0" "\\n" < /proc/$OUTER/environ | grep DSH_PARENT_SECRET',
        'echo end',
      ].join('; ')
      // network on: the host's network namespace is shared, so only the dropped capability stops `ip`.
      const invocation = await service.wrap({
        argv: ['bash', '-c', script],
        cwd: ws,
        policy: policy('workspace-write', true),
      })
      const { output } = runUnderSecretParent(invocation)
      expect(output).toContain('end')
      expect(output).not.toContain('mknod-worked')
      expect(existsSync(join(temp, `blk-${runner}`))).toBe(false)
      expect(output).not.toContain('ip-worked')
      expect(execFileSync('ip', ['addr', 'show', 'dev', 'lo'], { encoding: 'utf8' })).not.toContain(PROBE_ADDRESS)
      expect(output).not.toContain('parent-secret-value')
      if (viaServer) {
        // The spawn server's commands hold no capability either (the harness's environ is out of
        // reach anyway: the server's /proc shows only its own namespace).
        const served = await run(invocation)
        expect(served.output).toContain('end')
        expect(served.output).not.toContain('mknod-worked')
        expect(served.output).not.toContain('ip-worked')
        expect(existsSync(join(temp, `blk-${runner}`))).toBe(false)
        expect(execFileSync('ip', ['addr', 'show', 'dev', 'lo'], { encoding: 'utf8' })).not.toContain(PROBE_ADDRESS)
      }
    },
  )

  it.skipIf(skip)('a process detached with setsid does not outlive the command', async () => {
    const result = await bash(
      service,
      'workspace-write',
      `setsid sleep ${SURVIVOR} </dev/null >/dev/null 2>&1 & echo started`,
    )
    expect(result.output).toBe('started\n')
    // Killed when the command ends; a SIGKILL'd process can still be listed for a moment on a
    // loaded machine (CI), so give it until it is gone. A real survivor sleeps for an hour.
    await vi.waitFor(() => expect(survivors()).toEqual([]), { timeout: 3_000, interval: 50 })
  })

  it.skipIf(skip)(
    'the dsh home stays read-only and its credentials unreadable, even under a writable temp dir',
    async () => {
      const home = join(outside, `home-${runner}`)
      mkdirSync(join(home, 'sessions'), { recursive: true })
      writeFileSync(join(home, '.credentials.yaml'), 'deepseek: sk-home-credential\n')
      writeFileSync(join(home, '.env'), 'DEEPSEEK_API_KEY=sk-home-env\n')
      writeFileSync(join(home, 'settings.yaml'), 'theme: plain\n')
      const protect = { readOnlyPaths: [home], hiddenPaths: [join(home, '.credentials.yaml'), join(home, '.env')] }
      const script = [
        `echo "- insert: []" > ${home}/cordis.patch.yml || echo patch-denied`,
        `echo x >> ${home}/sessions/log || echo sessions-denied`,
        `cat ${home}/.credentials.yaml ${home}/.env`,
        `cat ${home}/settings.yaml`,
      ].join('; ')
      const result = await bash(service, 'workspace-write', script, false, protect)
      expect(result.output).toContain('patch-denied')
      expect(result.output).toContain('sessions-denied')
      expect(result.output).toContain('theme: plain')
      expect(result.output).not.toContain('sk-home')
      expect(existsSync(join(home, 'cordis.patch.yml'))).toBe(false)

      // The same home inside a writable temp dir (as with DSH_HOME under /tmp).
      const inner = join(temp, `home-${runner}`)
      mkdirSync(inner, { recursive: true })
      writeFileSync(join(inner, '.env'), 'DEEPSEEK_API_KEY=sk-inner-env\n')
      const innerProtect = {
        readOnlyPaths: [inner],
        hiddenPaths: [join(inner, '.credentials.yaml'), join(inner, '.env')],
      }
      const attack = `echo "- insert: []" > ${inner}/cordis.patch.yml || echo inner-patch-denied; cat ${inner}/.env; mkdir ${inner}/profiles || echo inner-mkdir-denied`
      if (runner === 'bwrap') {
        const confined = await bash(service, 'workspace-write', attack, false, innerProtect)
        expect(confined.output).toContain('inner-patch-denied')
        expect(confined.output).toContain('inner-mkdir-denied')
        expect(confined.output).not.toContain('sk-inner')
      } else {
        // Landlock cannot carve a read-only hole out of a writable tree: it refuses instead.
        const error = await service
          .wrap({ argv: ['bash', '-c', attack], cwd: ws, policy: policy('workspace-write', false, innerProtect) })
          .catch((e) => e)
        expect(error.code).toBe('SANDBOX_UNAVAILABLE')
        expect(error.message).toContain(`cannot protect ${inner}`)
      }
      expect(existsSync(join(inner, 'cordis.patch.yml'))).toBe(false)
      expect(existsSync(join(inner, 'profiles'))).toBe(false)
    },
  )

  it.skipIf(skip)(
    'the project control files stay read-only and cannot be moved away; nothing is added to the tree',
    async () => {
      // The project lies two levels inside the writable temp dir (as a checkout under /tmp does), so
      // renaming a directory above a protected file is tried too.
      const project = join(temp, `nest-${runner}${viaServer ? '-server' : ''}`, 'proj')
      const git = (...args: string[]) =>
        execFileSync('git', ['-C', project, ...args], {
          encoding: 'utf8',
          env: { PATH: process.env.PATH, HOME: base, GIT_CONFIG_NOSYSTEM: '1' },
        })
      mkdirSync(join(project, '.claude'), { recursive: true })
      git('init', '-q')
      writeFileSync(join(project, '.mcp.json'), '{"mcpServers":{}}\n')
      writeFileSync(join(project, '.claude', 'settings.json'), '{}\n')
      writeFileSync(join(project, '.git', 'hooks', 'pre-commit'), '#!/bin/sh\nexit 0\n')
      const before = (path: string) => readFileSync(join(project, path), 'utf8')
      const originals = Object.fromEntries(
        ['.mcp.json', '.claude/settings.json', '.git/hooks/pre-commit', '.git/config'].map((path) => [
          path,
          before(path),
        ]),
      )
      const entries = () => readdirSync(project).sort()
      const listed = entries()
      const protect: Partial<SandboxPolicy> = {
        workspaceRoot: project,
        writableRoots: [project, temp],
        controlPaths: projectControlPaths(project),
      }
      const attack = [
        'echo evil > .mcp.json || echo mcp-write-denied',
        'rm -f .mcp.json 2>/dev/null; mv .mcp.json moved.json || echo mcp-move-denied',
        'echo evil > .claude/settings.json || echo claude-write-denied',
        'echo evil > .claude/settings.local.json || echo claude-create-denied',
        'mv .claude claude2 || echo claude-move-denied',
        'echo evil >> .git/hooks/pre-commit || echo hook-write-denied',
        'echo evil > .git/hooks/post-checkout || echo hook-create-denied',
        'printf "[core]\\n\\tfsmonitor = /bin/evil\\n" >> .git/config || echo config-write-denied',
        'mv .git git2 || echo git-move-denied',
        `mv ${project} ${project}2 || echo project-move-denied`,
        `mv ${dirname(project)} ${dirname(project)}2 || echo parent-move-denied`,
        // Positive control: the rest of the project, git's own files included, stays writable.
        'echo ok > notes.txt && git add notes.txt && echo git-add-ok',
      ].join('; ')
      const invocation = await service.wrap({
        argv: ['bash', '-c', attack],
        cwd: project,
        policy: policy('workspace-write', false, protect),
      })
      if (runner === 'landlock' && !(await service.describe()).notes?.includes(PID_NAMESPACE_NOTE)) {
        // Landlock only adds rights; without a mount namespace of its own the runner says so
        // instead of refusing (see the README).
        expect(invocation.notes).toContain(LANDLOCK_CONTROL_NOTE)
        return
      }
      expect(invocation.notes).not.toContain(LANDLOCK_CONTROL_NOTE)
      const result = await run(invocation, project)
      for (const denied of [
        'mcp-write',
        'mcp-move',
        'claude-write',
        'claude-create',
        'claude-move',
        'hook-write',
        'hook-create',
        'config-write',
        'git-move',
        'project-move',
        'parent-move',
      ]) {
        expect(result.output).toContain(`${denied}-denied`)
      }
      expect(result.output).toContain('git-add-ok')
      for (const [path, text] of Object.entries(originals)) expect(before(path)).toBe(text)
      expect(existsSync(join(project, '.git', 'hooks', 'post-checkout'))).toBe(false)
      expect(existsSync(join(project, '.claude', 'settings.local.json'))).toBe(false)
      // Only the command's own file is new: no mount point was left for the missing .codex, .dsh, .env.
      expect(entries()).toEqual([...listed, 'notes.txt'].sort())
      expect(git('ls-files')).toBe('notes.txt\n')
    },
  )

  it.skipIf(skip || runner === 'landlock')(
    'a dsh home deeper inside a writable dir cannot be swapped by renaming a directory above it',
    async () => {
      const home = join(temp, `deep-${runner}${viaServer ? '-server' : ''}`, 'home')
      mkdirSync(home, { recursive: true })
      writeFileSync(join(home, 'settings.yaml'), 'theme: plain\n')
      const above = dirname(home)
      const attack = `mv ${above} ${above}.old || echo rename-denied; mkdir -p ${home} && echo "- insert: []" > ${home}/cordis.patch.yml || echo plant-denied`
      const result = await bash(service, 'workspace-write', attack, false, { readOnlyPaths: [home] })
      expect(result.output).toContain('rename-denied')
      expect(result.output).toContain('plant-denied')
      expect(existsSync(`${above}.old`)).toBe(false)
      expect(existsSync(join(home, 'cordis.patch.yml'))).toBe(false)
    },
  )

  it.skipIf(skip)(
    'a linked worktree: its .git file and the real git directory it points to stay read-only',
    async () => {
      const main = join(temp, `main-${runner}${viaServer ? '-server' : ''}`)
      const tree = join(temp, `tree-${runner}${viaServer ? '-server' : ''}`)
      const git = (cwd: string, ...args: string[]) =>
        execFileSync('git', ['-C', cwd, ...args], {
          encoding: 'utf8',
          env: {
            PATH: process.env.PATH,
            HOME: base,
            GIT_CONFIG_NOSYSTEM: '1',
            GIT_AUTHOR_NAME: 't',
            GIT_AUTHOR_EMAIL: 't@t',
            GIT_COMMITTER_NAME: 't',
            GIT_COMMITTER_EMAIL: 't@t',
          },
        })
      mkdirSync(main, { recursive: true })
      git(main, 'init', '-q')
      git(main, 'commit', '-q', '--allow-empty', '-m', 'first')
      git(main, 'worktree', 'add', '-q', tree)
      const pointer = readFileSync(join(tree, '.git'), 'utf8')
      const config = readFileSync(join(main, '.git', 'config'), 'utf8')
      const protect: Partial<SandboxPolicy> = {
        workspaceRoot: tree,
        writableRoots: [tree, temp],
        controlPaths: projectControlPaths(tree),
      }
      const attack = [
        `echo "gitdir: ${temp}/evil" > .git || echo pointer-write-denied`,
        `echo evil >> ${main}/.git/config || echo common-config-denied`,
        `echo evil > ${main}/.git/hooks/pre-commit || echo common-hook-denied`,
        `mv ${main}/.git ${main}/git2 || echo common-move-denied`,
        'echo ok > notes.txt && echo tree-write-ok',
      ].join('; ')
      const invocation = await service.wrap({
        argv: ['bash', '-c', attack],
        cwd: tree,
        policy: policy('workspace-write', false, protect),
      })
      if (runner === 'landlock' && !(await service.describe()).notes?.includes(PID_NAMESPACE_NOTE))
        return expect(invocation.notes).toContain(LANDLOCK_CONTROL_NOTE)
      const result = await run(invocation, tree)
      for (const denied of ['pointer-write', 'common-config', 'common-hook', 'common-move'])
        expect(result.output).toContain(`${denied}-denied`)
      expect(result.output).toContain('tree-write-ok')
      expect(readFileSync(join(tree, '.git'), 'utf8')).toBe(pointer)
      expect(readFileSync(join(main, '.git', 'config'), 'utf8')).toBe(config)
      expect(existsSync(join(main, '.git', 'hooks', 'pre-commit'))).toBe(false)
    },
  )

  it.skipIf(skip)('refuses a workspace inside the protected home', async () => {
    const error = await service
      .wrap({ argv: ['true'], cwd: ws, policy: policy('workspace-write', false, { readOnlyPaths: [base] }) })
      .catch((e) => e)
    expect(error.code).toBe('SANDBOX_UNAVAILABLE')
    expect(error.message).toContain(`the writable root ${ws} lies inside ${base}`)
  })

  it.skipIf(skip)(
    'a dangling .git (or .env) symlink into a writable root: no command runs that could create its target',
    async () => {
      const project = join(temp, `dangling-${runner}${viaServer ? '-server' : ''}`)
      const target = join(temp, `gitdir-${runner}${viaServer ? '-server' : ''}`)
      mkdirSync(project, { recursive: true })
      symlinkSync(target, join(project, '.git'))
      const protect: Partial<SandboxPolicy> = {
        workspaceRoot: project,
        writableRoots: [project, temp],
        controlPaths: projectControlPaths(project),
      }
      // The command would make the link's target a repository with a hook the user's git runs later.
      const attack = `mkdir -p ${target}/hooks && printf '#!/bin/sh\\necho pwned\\n' > ${target}/hooks/pre-commit && echo planted`
      const attempt = service
        .wrap({ argv: ['bash', '-c', attack], cwd: project, policy: policy('workspace-write', false, protect) })
        .then(run, (error) => error)
      const outcome = await attempt
      if (runner === 'landlock' && !(await service.describe()).notes?.includes(PID_NAMESPACE_NOTE)) return
      expect(outcome).toMatchObject({ code: 'SANDBOX_UNAVAILABLE' })
      expect(outcome.message).toContain(`${join(project, '.git')} is a symbolic link to ${target}`)
      expect(existsSync(target)).toBe(false)
      // An existing target is protected as before, and a link pointing outside every writable
      // root needs nothing: neither is refused.
      mkdirSync(join(target, 'hooks'), { recursive: true })
      const fine = await bash(service, 'workspace-write', 'echo runs', false, protect)
      expect(fine.output).toBe('runs\n')
      rmSync(join(project, '.git'))
      symlinkSync(join(outside, 'no-such-gitdir'), join(project, '.git'))
      expect((await bash(service, 'read-only', 'echo ro', false, protect)).output).toBe('ro\n')
      expect((await bash(service, 'workspace-write', 'echo rw', false, protect)).output).toBe('rw\n')
    },
  )

  it.skipIf(skip || !viaServer || noServers)(
    'a server sees the filesystem as a runner per command would: a recreated writable root, a new entry beside a hidden file',
    async () => {
      const tag = `${runner}-fresh`
      // Outside the other writable roots, so only its own bind or rule makes it writable.
      const root = join(base, `root-${tag}`)
      const home = join(outside, `home-${tag}`)
      mkdirSync(root, { recursive: true })
      mkdirSync(home, { recursive: true })
      writeFileSync(join(home, '.env'), 'TOKEN=sk-fresh\n')
      const extra: Partial<SandboxPolicy> = {
        writableRoots: [ws, temp, root],
        readOnlyPaths: [home],
        hiddenPaths: [join(home, '.env')],
      }
      const first = await bash(service, 'workspace-write', `echo one > ${root}/one && cat ${home}/.env`, false, extra)
      expect(first.invocation.launcher).toBeDefined()
      expect(first.output).not.toContain('sk-fresh')
      expect(readFileSync(join(root, 'one'), 'utf8')).toBe('one\n')
      // The writable root is deleted and made again under the same policy.
      rmSync(root, { recursive: true })
      mkdirSync(root)
      const second = await bash(service, 'workspace-write', `echo two > ${root}/two`, false, extra)
      expect(second.invocation.launcher).toBeDefined()
      expect(readFileSync(join(root, 'two'), 'utf8')).toBe('two\n')
      // The home gains a file (bwrap lists the home's entries in its flags; Landlock grants them one by one).
      writeFileSync(join(home, 'settings.yaml'), 'theme: fresh\n')
      const third = await bash(service, 'workspace-write', `cat ${home}/settings.yaml; cat ${home}/.env`, false, extra)
      expect(third.output).toContain('theme: fresh')
      expect(third.output).not.toContain('sk-fresh')
    },
  )

  it.skipIf(skip)('danger-full-access runs unconfined', async () => {
    const result = await bash(
      service,
      'danger-full-access',
      `echo x > ${outside}/free && exec 3<>/dev/tcp/127.0.0.1/${port} && head -1 <&3`,
    )
    expect(result.invocation).toEqual({
      argv: ['bash', '-c', expect.any(String)],
      runner: 'none',
      enforcement: 'none',
      mode: 'danger-full-access',
      notes: [],
    })
    expect(result.output).toBe('hello\n')
    expect(readFileSync(join(outside, 'free'), 'utf8')).toBe('x\n')
    rmSync(join(outside, 'free'))
  })
})

describe('bwrap specifics', () => {
  it.skipIf(probes.get('bwrap') !== undefined)(
    'drops capabilities: a remount of / cannot make it writable',
    async () => {
      const service = await sandbox('bwrap')
      const result = await bash(
        service,
        'workspace-write',
        `mount -o remount,rw / 2>/dev/null; echo x > /dsh-remount-probe || echo denied`,
      )
      expect(result.output).toContain('denied')
      expect(existsSync('/dsh-remount-probe')).toBe(false)
    },
  )
})

describe('spawn servers', () => {
  const skip = probes.get('bwrap') !== undefined
  const ours = () =>
    spawnSync('pgrep', ['-P', String(process.pid), '-f', 'spawn-server'], { encoding: 'utf8' })
      .stdout.split('\n')
      .filter(Boolean).length

  it.skipIf(skip || noServers)(
    'one per distinct policy, the least recently used idle one ended past the limit, all ended on unload',
    async () => {
      const ctx = new Context()
      const fiber = ctx.plugin(LocalSandbox, { runner: 'bwrap', maxSpawnServers: 2 })
      await fiber
      const service = ctx.sandbox as LocalSandbox
      const before = ours()
      for (let i = 0; i < 3; i++) expect((await bash(service, 'workspace-write', 'echo same')).output).toBe('same\n')
      expect(service.spawnServers).toBe(1)
      expect((await bash(service, 'workspace-write', 'echo net', true)).output).toBe('net\n')
      expect(service.spawnServers).toBe(2)
      expect((await bash(service, 'read-only', 'echo ro')).output).toBe('ro\n')
      expect(service.spawnServers).toBe(2)
      expect(ours()).toBe(before + 2)
      await fiber.dispose()
      const end = Date.now() + 10_000
      while (ours() > before && Date.now() < end) await new Promise((r) => setTimeout(r, 20))
      expect(ours()).toBe(before)
    },
  )

  it.skipIf(skip)(
    'a protected file that appears later is protected at once (it changes the policy, so the server)',
    async () => {
      const service = await sandbox('bwrap')
      const secret = join(ws, `later-${process.pid}.env`)
      const protect = { hiddenPaths: [secret] }
      expect((await bash(service, 'workspace-write', 'echo first', false, protect)).output).toBe('first\n')
      writeFileSync(secret, 'TOKEN=sk-appeared-later\n')
      const read = await bash(
        service,
        'workspace-write',
        `cat ${secret}; echo x >> ${secret} || echo append-denied`,
        false,
        protect,
      )
      expect(read.output).not.toContain('sk-appeared-later')
      expect(read.output).toContain('append-denied')
      expect(readFileSync(secret, 'utf8')).toBe('TOKEN=sk-appeared-later\n')
      rmSync(secret)
    },
  )

  it.skipIf(skip || noServers)(
    'a server that does not come up leaves its policy to a bwrap per command, which says why',
    async () => {
      // A bwrap that works for everything but the server (as a flag only a server start uses would).
      const fake = join(base, 'bwrap-no-server')
      writeFileSync(
        fake,
        '#!/bin/sh\ncase "$*" in *spawn-server*) echo "bwrap: simulated refusal" >&2; exit 1;; esac\nexec bwrap "$@"\n',
        { mode: 0o755 },
      )
      const service = await sandbox('bwrap', { bwrap: fake })
      const first = await bash(service, 'workspace-write', 'echo served-by-argv')
      expect(first.invocation.launcher).toBeUndefined()
      expect(first.output).toBe('served-by-argv\n')
      expect([...service.failedServers.values()]).toEqual(['bwrap: simulated refusal'])
      expect((await bash(service, 'workspace-write', 'echo again')).output).toBe('again\n')
      expect(service.spawnServers).toBe(0)
    },
  )

  it.skipIf(skip)('spawnServer: false never starts one, nor does a request that runs its argv itself', async () => {
    const service = await sandbox('bwrap', { spawnServer: false })
    expect((await bash(service, 'workspace-write', 'echo plain')).invocation.launcher).toBeUndefined()
    expect(service.spawnServers).toBe(0)
    const other = await sandbox('bwrap')
    const invocation = await other.wrap({
      argv: ['bash', '-c', 'echo on-a-pty'],
      cwd: ws,
      policy: policy('workspace-write'),
      launcher: false,
    })
    expect(invocation.launcher).toBeUndefined()
    expect(other.spawnServers).toBe(0)
    expect((await run(invocation)).output).toBe('on-a-pty\n')
  })
})

describe('landlock spawn servers', () => {
  const skip = probes.get('landlock') !== undefined
  /** A node that logs each start of the Landlock helper as a spawn server (its argv ends in `spawn-server`). */
  function loggingNode(name: string, refuse = false): { file: string; starts: () => number } {
    const file = join(base, name)
    const log = `${file}.log`
    const serverCase = refuse
      ? `*spawn-server*) echo server >> ${log}; echo "dsh-sandbox(landlock): simulated refusal" >&2; exit 125;;`
      : `*spawn-server*) echo server >> ${log};;`
    writeFileSync(file, `#!/bin/sh\ncase "$*" in ${serverCase} esac\nexec ${process.execPath} "$@"\n`, { mode: 0o755 })
    return {
      file,
      starts: () => (existsSync(log) ? readFileSync(log, 'utf8').split('\n').filter(Boolean).length : 0),
    }
  }
  /** Spawn servers started by this process (through unshare or directly), by pid. */
  function serverPids(): number[] {
    const parents = new Map<number, number>()
    const servers: number[] = []
    for (const entry of readdirSync('/proc')) {
      if (!/^\d+$/.test(entry)) continue
      try {
        parents.set(Number(entry), Number(/^PPid:\s+(\d+)/m.exec(readFileSync(`/proc/${entry}/status`, 'utf8'))![1]))
        if (readFileSync(`/proc/${entry}/cmdline`, 'latin1').split('\0')[0]!.endsWith('/spawn-server'))
          servers.push(Number(entry))
      } catch {}
    }
    const ours = (pid: number): boolean => {
      for (let p = parents.get(pid); p !== undefined && p > 1; p = parents.get(p)) if (p === process.pid) return true
      return false
    }
    return servers.filter(ours)
  }

  it.skipIf(skip || noServers)(
    'one confined helper per policy, not one per command; every command still confined',
    async () => {
      const node = loggingNode('node-landlock-1')
      const others = new Set(serverPids())
      const ctx = new Context()
      const fiber = ctx.plugin(LocalSandbox, { runner: 'landlock', node: node.file })
      await fiber
      const service = ctx.sandbox as LocalSandbox
      for (let i = 0; i < 3; i++) {
        const result = await bash(service, 'workspace-write', `echo x > ${outside}/served-${i} || echo denied-${i}`)
        expect(result.invocation.launcher).toBeDefined()
        expect(result.output).toContain(`denied-${i}`)
      }
      expect(node.starts()).toBe(1)
      expect(service.spawnServers).toBe(1)
      expect((await bash(service, 'workspace-write', 'echo net', true)).output).toBe('net\n')
      expect(node.starts()).toBe(2)
      expect(service.spawnServers).toBe(2)
      await fiber.dispose()
      await vi.waitFor(() => expect(serverPids().filter((pid) => !others.has(pid))).toEqual([]), {
        timeout: 10_000,
        interval: 50,
      })
    },
  )

  it.skipIf(skip || noServers)(
    'a server that ends is started once more; after a second end the policy runs its confined argv',
    async () => {
      const node = loggingNode('node-landlock-2')
      const others = new Set(serverPids())
      const service = await sandbox('landlock', { node: node.file })
      const cat = `echo x > ${outside}/after-end || echo denied`
      expect((await bash(service, 'workspace-write', cat)).output).toContain('denied')
      for (const pid of serverPids()) if (!others.has(pid)) process.kill(pid, 'SIGKILL')
      await vi.waitFor(() => expect(service.spawnServers).toBe(0), { timeout: 10_000, interval: 20 })
      const again = await bash(service, 'workspace-write', cat)
      expect(again.invocation.launcher).toBeDefined()
      expect(again.output).toContain('denied')
      expect(node.starts()).toBe(2)
      for (const pid of serverPids()) if (!others.has(pid)) process.kill(pid, 'SIGKILL')
      await vi.waitFor(() => expect(service.spawnServers).toBe(0), { timeout: 10_000, interval: 20 })
      const third = await bash(service, 'workspace-write', cat)
      expect(third.invocation.launcher).toBeUndefined()
      expect([...service.failedServers.values()]).toEqual([expect.stringMatching(/^the spawn server ended twice/)])
      expect(third.output).toContain('denied')
      expect(node.starts()).toBe(2)
    },
  )

  it.skipIf(skip || noServers)(
    'a helper that refuses to start the server leaves the policy to its confined argv',
    async () => {
      const node = loggingNode('node-landlock-3', true)
      const service = await sandbox('landlock', { node: node.file })
      const result = await bash(service, 'workspace-write', `echo x > ${outside}/refused || echo denied`)
      expect(result.invocation.launcher).toBeUndefined()
      expect(result.output).toContain('denied')
      expect([...service.failedServers.values()]).toEqual(['dsh-sandbox(landlock): simulated refusal'])
    },
  )

  it.skipIf(skip)('the helper keeps only a descriptor it is told to, and refuses a bad one', () => {
    const helper = (controlFd: unknown, script: string) => {
      const spec = Buffer.from(JSON.stringify({ writable: [ws], network: true, controlFd })).toString('base64')
      return spawnSync(process.execPath, [LANDLOCK_HELPER, spec, '--', '/bin/sh', '-c', script], {
        encoding: 'utf8',
        stdio: ['ignore', 'pipe', 'pipe', 'pipe'],
      })
    }
    // fd 3 reaches the target only when the spec names it (Node marks it close-on-exec otherwise).
    expect(helper(3, 'echo kept >&3 && echo open').stdout).toBe('open\n')
    expect(helper(undefined, 'echo kept >&3 2>/dev/null || echo closed').stdout).toBe('closed\n')
    const bad = helper(2, 'true')
    expect(bad.status).toBe(125)
    expect(bad.stderr).toContain('spec.controlFd must be')
    const closed = helper(900, 'true')
    expect(closed.status).toBe(125)
    expect(closed.stderr).toContain('descriptor 900 is not open')
  })
})

describe('probe cache', () => {
  const skip = probes.get('bwrap') !== undefined
  /** A bwrap that logs each call (probes end in `true`), so a test can count real probes. */
  function loggingBwrap(name: string): { file: string; probes: () => number } {
    const file = join(base, name)
    const log = `${file}.log`
    writeFileSync(file, `#!/bin/sh\necho "$*" >> ${log}\nexec bwrap "$@"\n`, { mode: 0o755 })
    return {
      file,
      probes: () =>
        existsSync(log)
          ? readFileSync(log, 'utf8')
              .split('\n')
              .filter((line) => line.endsWith(' true')).length
          : 0,
    }
  }
  async function withHome(home: string, config: Record<string, unknown>) {
    const ctx = new Context()
    await ctx.plugin(HomePaths, { home })
    const fiber = ctx.plugin(LocalSandbox, { runner: 'auto', prewarmDelayMs: 20, ...config })
    await fiber
    return { service: ctx.sandbox as LocalSandbox, fiber }
  }
  const until = async (check: () => boolean) => {
    // A generous bound (a probe under load can take seconds); it only matters when the check fails.
    for (let i = 0; i < 600 && !check(); i++) await new Promise((r) => setTimeout(r, 20))
    return check()
  }

  it.skipIf(skip)(
    'the next process starts from the stored result and verifies it in the background (probeVerifyIntervalMs: 0)',
    async () => {
      const home = join(base, 'home-cache-1')
      const bwrap = loggingBwrap('bwrap-cache-1')
      const first = await withHome(home, { bwrap: bwrap.file, probeVerifyIntervalMs: 0 })
      expect(await first.service.describe()).toMatchObject({ runner: 'bwrap' })
      expect(bwrap.probes()).toBe(1)
      const file = join(home, '.cache', 'sandbox-probe.json')
      expect(JSON.parse(readFileSync(file, 'utf8')).probe).toMatchObject({ selected: { runner: 'bwrap' } })
      await first.fiber.dispose()

      const second = await withHome(home, { bwrap: bwrap.file, probeVerifyIntervalMs: 0 })
      expect(await second.service.describe()).toMatchObject({ runner: 'bwrap' })
      // Answered from the file: no probe yet; the verification follows after prewarmDelayMs.
      expect(bwrap.probes()).toBe(1)
      expect(await until(() => bwrap.probes() === 2)).toBe(true)
      expect((await bash(second.service, 'workspace-write', 'echo cached')).output).toBe('cached\n')
      await second.fiber.dispose()
    },
  )

  it.skipIf(skip)(
    'a stored result that is out of date is replaced by the verification; a damaged or foreign one is ignored',
    async () => {
      const home = join(base, 'home-cache-2')
      const bwrap = loggingBwrap('bwrap-cache-2')
      const first = await withHome(home, { bwrap: bwrap.file })
      await first.service.describe()
      await first.fiber.dispose()
      const file = join(home, '.cache', 'sandbox-probe.json')
      const stored = JSON.parse(readFileSync(file, 'utf8'))
      // Same key, wrong answer (as if bwrap had worked once and broken since, inverted here).
      writeFileSync(
        file,
        JSON.stringify({ key: stored.key, probe: { rejected: [{ runner: 'bwrap', reason: 'stale' }], notes: [] } }),
      )
      const stale = await withHome(home, { bwrap: bwrap.file })
      expect(await stale.service.describe()).toMatchObject({ rejected: [{ runner: 'bwrap', reason: 'stale' }] })
      expect(await until(() => bwrap.probes() === 2)).toBe(true)
      expect(await until(() => JSON.parse(readFileSync(file, 'utf8')).probe.selected?.runner === 'bwrap')).toBe(true)
      expect(await stale.service.describe()).toMatchObject({ runner: 'bwrap', rejected: [] })
      await stale.fiber.dispose()

      for (const content of [
        '{ not json',
        JSON.stringify({ key: stored.key, probe: { selected: { runner: 'chroot' }, rejected: [], notes: [] } }),
        JSON.stringify({ key: 'another machine', probe: stored.probe }),
      ]) {
        writeFileSync(file, content)
        const before = bwrap.probes()
        const fresh = await withHome(home, { bwrap: bwrap.file })
        expect(await fresh.service.describe()).toMatchObject({ runner: 'bwrap' })
        expect(bwrap.probes()).toBe(before + 1)
        expect(JSON.parse(readFileSync(file, 'utf8')).key).toBe(stored.key)
        await fresh.fiber.dispose()
      }
    },
  )

  it.skipIf(skip)(
    'a result verified within probeVerifyIntervalMs is used without a probe; an older one is verified and restamped',
    async () => {
      const home = join(base, 'home-cache-5')
      const bwrap = loggingBwrap('bwrap-cache-5')
      const first = await withHome(home, { bwrap: bwrap.file })
      await first.service.describe()
      await first.fiber.dispose()
      expect(bwrap.probes()).toBe(1)
      const file = join(home, '.cache', 'sandbox-probe.json')
      const stamped = JSON.parse(readFileSync(file, 'utf8'))
      expect(Math.abs(stamped.verifiedAt - Date.now())).toBeLessThan(60_000)
      // Within the interval: no probe child at all, however long the process lives.
      const recent = await withHome(home, { bwrap: bwrap.file })
      // The read of the stored result schedules any verification (after prewarmDelayMs): with fake
      // timers, run whatever it scheduled now. A probe child starts when its timer fires, and dispose
      // waits for probe children, so after dispose the log holds every probe that ran.
      vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] })
      try {
        expect(await recent.service.describe()).toMatchObject({ runner: 'bwrap' })
        vi.runOnlyPendingTimers()
      } finally {
        vi.useRealTimers()
      }
      expect((await bash(recent.service, 'workspace-write', 'echo trusted')).output).toBe('trusted\n')
      await recent.fiber.dispose()
      expect(bwrap.probes()).toBe(1)
      // Stamped longer ago than the interval (or not at all, or in the future): verified, then restamped.
      for (const verifiedAt of [Date.now() - 2 * 3_600_000, undefined, Date.now() + 3_600_000]) {
        writeFileSync(
          file,
          JSON.stringify({
            key: stamped.key,
            probe: stamped.probe,
            ...(verifiedAt === undefined ? {} : { verifiedAt }),
          }),
        )
        const before = bwrap.probes()
        const old = await withHome(home, { bwrap: bwrap.file })
        expect(await old.service.describe()).toMatchObject({ runner: 'bwrap' })
        expect(await until(() => bwrap.probes() === before + 1)).toBe(true)
        expect(
          await until(() => Math.abs(JSON.parse(readFileSync(file, 'utf8')).verifiedAt - Date.now()) < 60_000),
        ).toBe(true)
        await old.fiber.dispose()
      }
    },
  )

  it.skipIf(skip || noServers)('a trusted result whose spawn server does not start is verified at once', async () => {
    const home = join(base, 'home-cache-6')
    const bwrap = loggingBwrap('bwrap-cache-6')
    const first = await withHome(home, { bwrap: bwrap.file })
    await first.service.describe()
    await first.fiber.dispose()
    // The same binary now refuses to start a server (as a changed machine might): the stored,
    // recently verified answer is no longer trusted blindly.
    const broken = join(base, 'bwrap-cache-6-broken')
    writeFileSync(
      broken,
      `#!/bin/sh
case "$*" in *spawn-server*) echo "bwrap: simulated refusal" >&2; exit 1;; esac
exec ${bwrap.file} "$@"
`,
      { mode: 0o755 },
    )
    const file = join(home, '.cache', 'sandbox-probe.json')
    const stored = JSON.parse(readFileSync(file, 'utf8'))
    const again = await withHome(home, { bwrap: broken })
    // Same answer under the new binary's key, stamped as just verified.
    const key = (again.service as unknown as { probeKey(): string }).probeKey()
    writeFileSync(file, JSON.stringify({ key, probe: stored.probe, verifiedAt: Date.now() }))
    const before = bwrap.probes()
    expect((await bash(again.service, 'workspace-write', 'echo via-argv')).output).toBe('via-argv\n')
    expect(await until(() => bwrap.probes() === before + 1)).toBe(true)
    await again.fiber.dispose()
  })

  it.skipIf(skip)(
    'is keyed by the runner binary, off with probeCache: false, and never written without a home',
    async () => {
      const home = join(base, 'home-cache-3')
      const one = loggingBwrap('bwrap-cache-3a')
      const two = loggingBwrap('bwrap-cache-3b')
      for (const bwrap of [one, two]) {
        const run = await withHome(home, { bwrap: bwrap.file })
        await run.service.describe()
        await run.fiber.dispose()
      }
      expect([one.probes(), two.probes()]).toEqual([1, 1])
      const off = await withHome(join(base, 'home-cache-4'), { bwrap: one.file, probeCache: false })
      await off.service.describe()
      await off.fiber.dispose()
      expect(existsSync(join(base, 'home-cache-4', '.cache', 'sandbox-probe.json'))).toBe(false)
      // The other tests of this file run without a home service: nothing to write to.
      expect(
        existsSync(join(homedir(), '.dsh', '.cache', 'sandbox-probe.json')) &&
          readFileSync(join(homedir(), '.dsh', '.cache', 'sandbox-probe.json'), 'utf8').includes(base),
      ).toBe(false)
    },
  )
})

describe('bwrap probe', () => {
  it.skipIf(probes.get('bwrap') !== undefined)(
    'runs as PID 1 of its namespace, so no orphaned bwrap reaper is left behind as a zombie',
    async () => {
      // Without --as-pid-1 bwrap's reaper child is PID 1 and outlives the outer bwrap for a moment:
      // it is reparented to the machine's PID 1, which in containers often never reaps it.
      const log = join(base, 'probe-args.log')
      const wrapper = join(base, 'logging-bwrap.sh')
      writeFileSync(wrapper, `#!/bin/sh\nprintf '%s\\n' "$*" >> ${log}\nexec bwrap "$@"\n`, { mode: 0o755 })
      const service = await sandbox('bwrap', { bwrap: wrapper })
      expect((await service.describe()).runner).toBe('bwrap')
      const probe = readFileSync(log, 'utf8').trim().split('\n')[0].split(' ')
      expect(probe).toContain('--unshare-pid')
      expect(probe).toContain('--as-pid-1')
    },
  )
})

describe('landlock specifics', () => {
  it.skipIf(probes.get('landlock') !== undefined)(
    'runner auto says loudly when it falls back to Landlock',
    async () => {
      const ctx = new Context()
      const warnings: string[] = []
      ctx.logger.exporter({ levels: { default: 3 }, export: (m) => void warnings.push(JSON.stringify(m)) })
      await ctx.plugin(LocalSandbox, { runner: 'auto', bwrap: join(base, 'no-bwrap') })
      const info = await ctx.sandbox.describe()
      expect(info.runner).toBe('landlock')
      expect(info.notes?.[0]).toBe(LANDLOCK_NOTE)
      expect([PID_NAMESPACE_NOTE, NO_PID_NAMESPACE_NOTE]).toContain(info.notes?.[1])
      expect(warnings.join('\n')).toMatch(/weaker Landlock fallback/)
    },
  )
})

describe('fail closed', () => {
  it('runner none: confining modes throw SANDBOX_UNAVAILABLE, danger-full-access passes', async () => {
    const service = await sandbox('none')
    expect(await service.describe()).toEqual({ rejected: [{ runner: 'none', reason: 'configured runner: none' }] })
    for (const mode of ['workspace-write', 'read-only'] as const) {
      const error = await service.wrap({ argv: ['true'], cwd: ws, policy: policy(mode) }).catch((e) => e)
      expect(isSandboxError(error)).toBe(true)
      expect(error.code).toBe('SANDBOX_UNAVAILABLE')
      expect(error.message).toContain('was not run')
    }
    expect((await service.wrap({ argv: ['true'], cwd: ws, policy: policy('danger-full-access') })).argv).toEqual([
      'true',
    ])
  })

  it('auto with no working candidate names each rejected runner', async () => {
    const service = await sandbox('auto', { bwrap: join(base, 'no-bwrap'), node: join(base, 'no-node') })
    const info = await service.describe()
    expect(info.runner).toBeUndefined()
    expect(info.rejected.map((r) => r.runner)).toEqual(['bwrap', 'landlock'])
    const error = await service.wrap({ argv: ['true'], cwd: ws, policy: policy('workspace-write') }).catch((e) => e)
    expect(error.code).toBe('SANDBOX_UNAVAILABLE')
    expect(error.message).toMatch(/bwrap: .*; landlock: /)
  })

  it('auto prefers bwrap when it works', async () => {
    const service = await sandbox('auto')
    const info = await service.describe()
    expect(info.runner).toBe(
      probes.get('bwrap') === undefined ? 'bwrap' : probes.get('landlock') === undefined ? 'landlock' : undefined,
    )
  })
})

describe('bad input', () => {
  it('refuses a malformed request or policy', async () => {
    const service = await sandbox('none')
    const cases: unknown[] = [
      { argv: [], cwd: ws, policy: policy('read-only') },
      { argv: ['true'], cwd: 'relative', policy: policy('read-only') },
      { argv: ['true'], cwd: ws, policy: { ...policy('read-only'), mode: 'yolo' } },
      { argv: ['true'], cwd: ws, policy: { ...policy('workspace-write'), writableRoots: ['rel'] } },
      { argv: ['true'], cwd: ws, policy: { ...policy('workspace-write'), writableRoots: ['/'] } },
    ]
    for (const request of cases) {
      const error = await service.wrap(request as never).catch((e) => e)
      expect(error.code).toBe('INVALID_POLICY')
    }
  })

  it('the Landlock helper refuses a bad mounts spec, and to mount in the mount namespace of its caller', () => {
    const helper = (mounts: unknown) => {
      const spec = Buffer.from(JSON.stringify({ writable: [ws], network: true, mounts })).toString('base64')
      return spawnSync(process.execPath, [LANDLOCK_HELPER, spec, '--', 'true'], { encoding: 'utf8' })
    }
    const bad = helper({ namespace: 'x', pins: ['rel'], readOnly: [] })
    expect(bad.status).toBe(125)
    expect(bad.stderr).toContain('spec.mounts needs')
    // Run directly, the helper shares this process's mount namespace: mounting there would change
    // the host's view, so it must refuse before touching anything.
    const own = helper({ namespace: readlinkSync('/proc/self/ns/mnt'), pins: [], readOnly: [join(ws, 'nothing')] })
    expect(own.status).toBe(125)
    expect(own.stderr).toContain('not in a mount namespace of its own')
  })

  it('rejects a bad runner choice at load', async () => {
    const ctx = new Context()
    // The fiber settles with the config error: wait for that, not for time.
    await expect(ctx.plugin(LocalSandbox, { runner: 'seatbelt' } as never)).rejects.toThrow(/seatbelt|runner/)
    expect(ctx.get('sandbox')).toBeUndefined()
  })
})

it('no confined command of this file wrote outside the writable roots', () => {
  // Every escape attempt above aimed at `outside` (or its home dirs); only files the tests
  // themselves created there may exist.
  const planted = new Set(['home-bwrap', 'home-landlock', 'home-bwrap-fresh', 'home-landlock-fresh'])
  expect(readdirSync(outside).filter((name) => !planted.has(name))).toEqual([])
  for (const runner of ['bwrap', 'landlock']) {
    const home = join(outside, `home-${runner}`)
    if (existsSync(home))
      expect(readdirSync(home).sort()).toEqual(['.credentials.yaml', '.env', 'sessions', 'settings.yaml'])
  }
})
