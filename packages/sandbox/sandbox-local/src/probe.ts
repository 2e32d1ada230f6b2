// The runner probe: whether bwrap, or else the Landlock helper (and unshare), works here, the
// child processes that find out, and the probe result stored in the dsh home with its key.
import { execFile } from 'node:child_process'
import { mkdirSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs'
import { release, version } from 'node:os'
import { dirname, join } from 'node:path'
import { nativeSpawn, type SpawnedChild } from '@dsh/posix-spawn'
import { LANDLOCK_HELPER, type SandboxLocalConfig } from './constants.ts'

export interface Selected {
  runner: 'bwrap' | 'landlock'
  /** Landlock only: can the helper turn the network off (seccomp filter for this architecture)? */
  seccomp?: boolean
  abi?: number
  /** Landlock only: may `unshare` give each command its own PID and mount namespace (and net when offline)? */
  namespaces?: boolean
}

export interface Probe {
  selected?: Selected
  rejected: Array<{ runner: string; reason: string }>
  notes: string[]
}

/** What a probe child printed and how it ended (code null: it could not run or a signal ended it). */
export interface ProbeResult {
  code: number | null
  output: string
}

/** Runs one probe child. */
export type ProbeRun = (file: string, args: string[]) => Promise<ProbeResult>

/** `name` looked up on this process's PATH, or undefined. */
function onPath(name: string): string | undefined {
  for (const dir of (process.env.PATH ?? '').split(':')) {
    if (!dir) continue
    const path = join(dir, name)
    try {
      if (statSync(path).isFile()) return path
    } catch {}
  }
  return undefined
}

/** A stored probe result of the right shape (a file in the home could be damaged or old). */
export function isProbe(value: unknown): value is Probe {
  if (value === null || typeof value !== 'object') return false
  const probe = value as Probe
  if (
    !Array.isArray(probe.rejected) ||
    !Array.isArray(probe.notes) ||
    !probe.notes.every((note) => typeof note === 'string')
  )
    return false
  if (
    !probe.rejected.every(
      (entry) =>
        entry !== null &&
        typeof entry === 'object' &&
        typeof entry.runner === 'string' &&
        typeof entry.reason === 'string',
    )
  )
    return false
  if (probe.selected === undefined) return true
  const selected = probe.selected as Selected | null
  if (selected === null || typeof selected !== 'object') return false
  if (selected.runner === 'bwrap') return true
  return (
    selected.runner === 'landlock' &&
    typeof selected.abi === 'number' &&
    typeof selected.seccomp === 'boolean' &&
    typeof selected.namespaces === 'boolean'
  )
}

/**
 * What a probe's answer depends on besides the kernel's behaviour: the configuration, the
 * runner binaries (path, size, mtime), the kernel build, the user and the user-namespace
 * switches. Any change means a new probe.
 */
export function probeKey(config: SandboxLocalConfig): string {
  const stamp = (file: string): string => {
    const path = file.includes('/') ? file : onPath(file)
    if (!path) return 'missing'
    try {
      const st = statSync(path)
      return `${path}:${st.size}:${st.mtimeMs}`
    } catch {
      return 'missing'
    }
  }
  const sysctl = (path: string): string => {
    try {
      return readFileSync(path, 'utf8').trim()
    } catch {
      return ''
    }
  }
  return JSON.stringify({
    v: 1,
    runner: config.runner,
    bwrap: stamp(config.bwrap),
    node: stamp(config.node),
    unshare: stamp(config.unshare),
    helper: stamp(LANDLOCK_HELPER),
    kernel: `${release()} ${version()}`,
    uid: process.getuid?.() ?? -1,
    sysctls: [
      '/proc/sys/kernel/unprivileged_userns_clone',
      '/proc/sys/user/max_user_namespaces',
      '/proc/sys/kernel/apparmor_restrict_unprivileged_userns',
    ].map(sysctl),
  })
}

export function readProbeCache(path: string, key: () => string): { probe: Probe; verifiedAt: number } | undefined {
  try {
    const stored = JSON.parse(readFileSync(path, 'utf8')) as { key?: unknown; probe?: Probe; verifiedAt?: unknown }
    if (stored.key !== key() || !isProbe(stored.probe)) return undefined
    // No stamp (an older file): as if verified long ago.
    return {
      probe: stored.probe,
      verifiedAt: typeof stored.verifiedAt === 'number' && Number.isFinite(stored.verifiedAt) ? stored.verifiedAt : 0,
    }
  } catch {
    return undefined // missing or unreadable: probe as usual (and rewrite it)
  }
}

export function writeProbeCache(path: string, key: () => string, probe: Probe): void {
  try {
    mkdirSync(dirname(path), { recursive: true, mode: 0o700 })
    const temp = `${path}.${process.pid}.tmp`
    writeFileSync(temp, JSON.stringify({ key: key(), probe, verifiedAt: Date.now() }) + '\n', {
      mode: 0o600,
    })
    renameSync(temp, path)
  } catch {
    // A read-only home: every process probes, as without the cache.
  }
}

/** Undefined when a minimal confined `true` runs; else why not. */
export async function probeBwrap(run: ProbeRun, bwrap: string): Promise<string | undefined> {
  // --as-pid-1 as in wrap(): without it bwrap's own reaper is PID 1 of the namespace, and it is
  // orphaned when the outer bwrap exits first (a zombie under the container's PID 1 per probe).
  const args = [
    '--ro-bind',
    '/',
    '/',
    '--dev',
    '/dev',
    '--proc',
    '/proc',
    '--unshare-pid',
    '--as-pid-1',
    '--die-with-parent',
    '--cap-drop',
    'ALL',
    '--unshare-net',
    '--',
    'true',
  ]
  const { code, output } = await run(bwrap, args)
  if (code === 0) return undefined
  return `${bwrap} ${code === null ? 'could not run' : `exited ${code}`}${output ? `: ${output.trim().split('\n')[0]}` : ''}`
}

export async function probeLandlock(
  run: ProbeRun,
  node: string,
  unshare: string,
): Promise<{ abi: number; seccomp: boolean; namespaces: boolean } | string> {
  const { code, output } = await run(node, [LANDLOCK_HELPER, '--probe'])
  if (code !== 0) return `the Landlock helper failed${output ? `: ${output.trim().split('\n')[0]}` : ''}`
  let facts: { abi: number; seccomp: boolean }
  try {
    facts = JSON.parse(output) as { abi: number; seccomp: boolean }
  } catch {
    return `unexpected probe output ${JSON.stringify(output.slice(0, 100))}`
  }
  if (!(facts.abi >= 1)) return 'Landlock is not enabled in this kernel'
  const namespaces =
    (await run(unshare, ['--pid', '--fork', '--kill-child', '--mount-proc', '--net', '--', 'true'])).code === 0
  return { abi: facts.abi, seccomp: facts.seccomp === true, namespaces }
}

/** Runs a probe child, tracked in `probing` so an unload can end and reap it. */
export function runProbeChild(
  file: string,
  args: string[],
  timeoutMs: number,
  probing: Set<SpawnedChild>,
): Promise<ProbeResult> {
  return runNative(file, args, timeoutMs, probing) ?? runExecFile(file, args, timeoutMs, probing)
}

/**
 * The probe through posix_spawn (no fork of the harness: several ms less per probe where page
 * tables are costly to copy). Undefined where the add-on is not built or the spawn failed, so
 * execFile runs it and reports the failure as before.
 */
function runNative(
  file: string,
  args: string[],
  timeoutMs: number,
  probing: Set<SpawnedChild>,
): Promise<ProbeResult> | undefined {
  let child: SpawnedChild | undefined
  try {
    child = nativeSpawn(file, args, {
      cwd: process.cwd(),
      env: process.env as Record<string, string>,
      stdinPipe: false,
      searchPath: true,
    })
  } catch {
    return undefined
  }
  if (!child) return undefined
  const spawned = child
  probing.add(spawned)
  let stdout = ''
  let stderr = ''
  spawned.stdout?.setEncoding('utf8').on('data', (text: string) => (stdout += text))
  spawned.stderr?.setEncoding('utf8').on('data', (text: string) => (stderr += text))
  const timer = setTimeout(() => spawned.kill('SIGTERM'), timeoutMs)
  return new Promise((resolve) => {
    spawned.once('close', (code: number | null, signal: string | null) => {
      clearTimeout(timer)
      probing.delete(spawned)
      if (code === 0) return resolve({ code: 0, output: stdout })
      // Nothing printed: only an end by a signal has something to say (an exit code is already reported).
      resolve({
        code,
        output: `${stderr}${stdout}` || (code === null ? `${file} was ended by ${signal ?? 'a signal'}` : ''),
      })
    })
  })
}

function runExecFile(
  file: string,
  args: string[],
  timeoutMs: number,
  probing: Set<SpawnedChild>,
): Promise<ProbeResult> {
  return new Promise((resolve) => {
    const child = execFile(file, args, { timeout: timeoutMs, encoding: 'utf8' }, (error, stdout, stderr) => {
      if (!error) return resolve({ code: 0, output: stdout })
      const code = typeof (error as { code?: unknown }).code === 'number' ? (error as { code: number }).code : null
      // As in runNative: an exit code says enough when nothing was printed.
      resolve({ code, output: `${stderr || ''}${stdout || ''}` || (code === null ? error.message : '') })
    })
    probing.add(child)
    child.once('close', () => probing.delete(child))
  })
}

/**
 * Waits for probe children still running, so none outlives dsh as an orphan (a container's PID 1
 * often never reaps). A probe is a `true` and normally ends at once; killing bwrap early would
 * orphan its inner child, so a kill only follows a grace of up to 2 s.
 */
export async function endProbes(probing: Set<SpawnedChild>, probeTimeoutMs: number): Promise<void> {
  const grace = Math.min(probeTimeoutMs, 2_000)
  await Promise.all(
    [...probing].map(
      (child) =>
        new Promise<void>((resolve) => {
          if (child.exitCode !== null || child.signalCode !== null) return resolve()
          const timer = setTimeout(() => child.kill('SIGKILL'), grace)
          child.once('close', () => {
            clearTimeout(timer)
            resolve()
          })
        }),
    ),
  )
}
