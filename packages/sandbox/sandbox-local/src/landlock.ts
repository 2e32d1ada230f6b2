// The Landlock runner's argv: the helper (helper/landlock-exec.mjs) with its spec, behind
// `unshare` where namespaces work, and how to start the same confinement as a spawn server.
import { readlinkSync } from 'node:fs'
import { dirname } from 'node:path'
import { SandboxError, type SandboxPolicy } from '@dsh/sandbox'
import { controlTargets, pinDirs } from './bwrap.ts'
import { LANDLOCK_CONTROL_NOTE, LANDLOCK_HELPER } from './constants.ts'
import { within } from './policy.ts'
import type { Selected } from './probe.ts'
import { captured, type ServerStart } from './servers.ts'

export interface LandlockPlan {
  /** The command behind the helper (and unshare): a runner per command. */
  argv: string[]
  notes: string[]
  stderrMerged: boolean
  /** The same confinement as a spawn server for the policy. */
  server: ServerStart
}

/** What a Landlock command of `policy` runs; throws SANDBOX_UNAVAILABLE where Landlock cannot confine it. */
export function landlockPlan(options: {
  node: string
  unshare: string
  selected: Selected
  policy: SandboxPolicy
  writable: string[]
  readOnly: string[]
  hidden: string[]
  argv: string[]
  /** PID1_INIT or PID1_INIT_MERGED. */
  init: string
  merge: boolean
}): LandlockPlan {
  const { selected, policy, writable, readOnly, hidden, argv, init, merge } = options
  if (!policy.network && !selected.seccomp) {
    throw new SandboxError(
      'SANDBOX_UNAVAILABLE',
      `the Landlock runner cannot turn the network off on ${process.arch} (no seccomp filter for it), so the command was not run`,
    )
  }
  // Landlock only adds rights: a read-only or unreadable hole inside a writable tree cannot be made.
  for (const path of [...readOnly, ...hidden]) {
    const root = writable.find((candidate) => within(path, candidate))
    if (root !== undefined) {
      throw new SandboxError(
        'SANDBOX_UNAVAILABLE',
        `the Landlock runner cannot protect ${path} inside the writable root ${root} (a confined command could rewrite dsh's configuration or read its credentials), so the command was not run; move DSH_HOME outside ${root} or install bubblewrap`,
      )
    }
  }
  // Landlock only adds rights. In a mount namespace of its own (namespaces, as root) the helper
  // binds the existing control files read-only before Landlock, as bwrap does; otherwise they
  // stay writable, and the project-trust consent still guards what dsh starts from them.
  const controlled = controlTargets(policy.controlPaths ?? [], writable)
  const mounts =
    selected.namespaces && controlled.length > 0
      ? { namespace: ownMountNamespace(), pins: pinDirs(controlled, writable), readOnly: controlled }
      : undefined
  const confinement = { writable, network: policy.network, hidden, ...(mounts ? { mounts } : {}) }
  const spec = Buffer.from(JSON.stringify(confinement)).toString('base64')
  const notes = policy.network
    ? []
    : ['network: IPv4/IPv6 sockets are refused; Unix-domain sockets on the filesystem stay reachable']
  if (!selected.namespaces && (policy.controlPaths ?? []).some((path) => writable.some((root) => within(path, root))))
    notes.push(LANDLOCK_CONTROL_NOTE)
  // Own PID namespace: when the command ends, the kernel ends everything it left behind (setsid
  // included); a private /proc hides the harness's processes. The sh init is PID 1 (see PID1_INIT).
  const namespaces = selected.namespaces
    ? [options.unshare, '--pid', '--fork', '--kill-child', '--mount-proc', ...(policy.network ? [] : ['--net']), '--']
    : []
  // The same confinement without a Node start per command: a spawn server started once per
  // policy behind the helper, which confines it (mounts, capabilities, seccomp, Landlock) and
  // keeps its control socket (fd 3) open across the execve. Landlock and seccomp bind a process
  // and all its descendants for good, so every command the server starts is confined as the
  // helper would confine it; a different policy needs a server of its own. In its own PID
  // namespace the server is PID 1 and sweeps what a command leaves behind.
  const server: ServerStart = {
    prefix: [
      ...namespaces,
      options.node,
      LANDLOCK_HELPER,
      Buffer.from(JSON.stringify({ ...confinement, controlFd: 3 })).toString('base64'),
      '--',
    ],
    sweep: selected.namespaces === true,
    captured: captured([...writable, ...(mounts ? [...mounts.pins, ...mounts.readOnly] : [])], hiddenAncestors(hidden)),
  }
  const helper = [options.node, LANDLOCK_HELPER, spec, '--']
  if (!selected.namespaces) return { argv: [...helper, ...argv], notes, stderrMerged: false, server }
  return {
    argv: [...namespaces, ...helper, '/bin/sh', '-c', init, 'dsh-sandbox-init', ...argv],
    notes,
    stderrMerged: merge,
    server,
  }
}

/** The directories the Landlock helper lists to hide `hidden` (see addReadRules in the helper). */
export function hiddenAncestors(hidden: readonly string[]): string[] {
  const dirs = new Set<string>()
  for (const path of hidden)
    for (let dir = dirname(path); ; dir = dirname(dir)) {
      dirs.add(dir)
      if (dir === dirname(dir)) break
    }
  return [...dirs].sort()
}

/** This process's mount namespace (`mnt:[N]`): the Landlock helper refuses to mount in it. */
function ownMountNamespace(): string {
  try {
    return readlinkSync('/proc/self/ns/mnt')
  } catch {
    return 'unknown'
  }
}
