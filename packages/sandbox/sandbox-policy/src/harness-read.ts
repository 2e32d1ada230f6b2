// "May the harness read this path on the model's behalf?" The file tools, the search tools and the
// context plugins (instruction files, skills, `@file` mentions) run inside the dsh process, not in
// the sandbox, so they see what a confined command cannot: dsh's own environment and memory under
// /proc (the API key among them), and the credential files the sandbox hides. One check for all of
// them, so the rule is the same everywhere and a new reader cannot forget part of it.
import { lstatSync, readlinkSync, realpathSync, statfsSync } from 'node:fs'
import { basename, dirname, join, resolve as resolvePath, sep } from 'node:path'
import type { SandboxPolicy } from '@dsh/sandbox'

/** `statfs` type of procfs (PROC_SUPER_MAGIC). */
const PROC_SUPER_MAGIC = 0x9fa0

/**
 * A per-process entry of /proc: `/proc/self`, `/proc/thread-self` or `/proc/<pid>`, and anything
 * below (environ, mem, cmdline, fd/, root/, cwd/, map_files/, task/<tid>/...). Seen from the
 * harness, every such entry belongs to a process outside the sandbox (dsh itself, its children,
 * the user's other programs); a confined command gets a private /proc without them.
 */
const PROC_PROCESS = /^\/proc\/(?:self|thread-self|\d+)(?:\/|$)/
/** dsh's own open files under their /dev aliases (links into /proc/self/fd). */
const DEV_FD = /^\/dev\/(?:fd(?:\/|$)|stdin$|stdout$|stderr$)/

/** Most symlink hops followed by hand (the kernel's own limit is 40). */
const MAX_HOPS = 40

export interface HarnessReadOptions {
  /**
   * Directories the real path must lie in, in every mode (a project's instruction files and
   * skills: a link from a cloned repository to a file elsewhere is refused). Symlinks of the roots
   * themselves are resolved.
   */
  roots?: readonly string[]
  /**
   * What was really opened, when the caller has the file open already (the target of
   * `/proc/self/fd/<fd>`): checked too, and taken as the real path for `roots`, so swapping a
   * link between the check and the open does not help.
   */
  opened?: string
}

/**
 * Why the harness must not read `path` for the model under `policy`, as a clause that completes
 * "refused to read <path>: ...", or undefined when it may. In a confining mode (read-only,
 * workspace-write) refused are: the policy's hidden paths (dsh's credential files) and any
 * per-process /proc entry (another process's environment, memory, command line, open files or
 * root), each checked on the path as given, on every hop of a symlink chain and on the real path,
 * so a link in the workspace, a `/proc/self/root/...` detour or a `/proc/self/fd/N` alias all end at
 * the same answer. With `roots`, a real path outside them is refused in every mode.
 */
export function harnessReadRefusal(
  path: string,
  policy: SandboxPolicy | undefined,
  options: HarnessReadOptions = {},
): string | undefined {
  const abs = resolvePath(path)
  const places = placesOf(abs)
  if (options.opened !== undefined) places.push(options.opened)
  if (options.roots !== undefined) {
    const real = options.opened ?? realLocation(abs)
    const roots = options.roots.map(realpathOrSelf)
    if (real === undefined)
      return `it is a link whose target cannot be resolved, and only files under ${roots.join(', ')} are read`
    if (!roots.some((root) => within(real, root)))
      return `it resolves to ${real}, outside ${roots.join(', ')}, and only files there are read`
  }
  if (policy === undefined || policy.mode === 'danger-full-access') return undefined
  const hidden = policy.hiddenPaths ?? []
  const lead = (place: string) => (place === abs ? 'it is' : `it leads to ${place}, which is`)
  for (const place of places) {
    const entry = hidden.find((candidate) => within(place, candidate))
    if (entry !== undefined)
      return `${lead(place)} under ${entry}, dsh's credentials, which are not readable in ${policy.mode} mode`
  }
  // By name first (the message then names the /proc path), then by filesystem type.
  const proc = places.find((place) => isProcessEntry(place, false)) ?? places.find((place) => isProcessEntry(place))
  if (proc !== undefined) {
    return (
      `${lead(proc)} a per-process /proc entry (a process's environment, memory, command line or open files, ` +
      `dsh's own included), which is not readable in ${policy.mode} mode; commands run in the sandbox see only their own processes there`
    )
  }
  return undefined
}

/** True when `path` is a per-process /proc entry (or dsh's /dev/fd alias), or lies on a procfs mounted elsewhere. */
export function isProcessEntry(path: string, statfs = true): boolean {
  if (PROC_PROCESS.test(path) || DEV_FD.test(path)) return true
  if (!statfs || path === '/proc' || path.startsWith('/proc/')) return false
  // A procfs mounted somewhere else: its layout is unknown here, so all of it counts.
  try {
    return statfsSync(path).type === PROC_SUPER_MAGIC
  } catch {
    return false
  }
}

/**
 * Every place a read of `abs` passes through: the path itself, each hop of the symlink chain of
 * its last component (followed by hand, so a target the kernel cannot name, such as a pipe behind
 * `/proc/self/fd/N`, is still seen), and the real location of each.
 */
function placesOf(abs: string): string[] {
  const places = new Set<string>([abs])
  let current = abs
  for (let hop = 0; hop <= MAX_HOPS; hop++) {
    const real = realLocation(current)
    if (real !== undefined) places.add(real)
    let target: string
    try {
      if (!lstatSync(current).isSymbolicLink()) break
      target = readlinkSync(current)
    } catch {
      break
    }
    // A relative target is relative to the directory holding the link (its own links resolved),
    // not to where the whole chain ends.
    current = resolvePath(realLocation(dirname(current)) ?? dirname(current), target)
    places.add(current)
  }
  return [...places]
}

/**
 * `abs` with the symlinks of its longest existing prefix resolved (missing tail components kept).
 * Undefined when a parent component is a dangling symlink (its real location is unknowable).
 */
export function realLocation(abs: string): string | undefined {
  const missing: string[] = []
  let current = abs
  for (;;) {
    try {
      return missing.length === 0 ? realpathSync(current) : join(realpathSync(current), ...missing.reverse())
    } catch {
      if (current !== abs && isLink(current)) return undefined
      const parent = dirname(current)
      if (parent === current) return abs
      missing.push(basename(current))
      current = parent
    }
  }
}

/** The path a file descriptor of this process really has open (Linux), or undefined. */
export function openedPath(fd: number): string | undefined {
  try {
    return readlinkSync(`/proc/self/fd/${fd}`)
  } catch {
    return undefined
  }
}

function isLink(path: string): boolean {
  try {
    return lstatSync(path).isSymbolicLink()
  } catch {
    return false
  }
}

function realpathOrSelf(path: string): string {
  try {
    return realpathSync.native(path)
  } catch {
    return path
  }
}

function within(path: string, root: string): boolean {
  return path === root || path.startsWith(root.endsWith(sep) ? root : root + sep)
}
