// The bubblewrap runner's argv: the sandbox's flags for a policy, and the mounts that keep the
// protected paths and the project control files read-only or hidden inside the writable binds.
import { existsSync, mkdirSync, readdirSync, realpathSync, statSync } from 'node:fs'
import { dirname, join, sep } from 'node:path'
import type { SandboxPolicy } from '@dsh/sandbox'
import { within } from './policy.ts'

/** bwrap and its flags for `policy`, up to (not including) the per-command --chdir and command. */
export function bwrapFlags(
  bwrap: string,
  policy: SandboxPolicy,
  writable: string[],
  readOnly: string[],
  hidden: string[],
  control: string[],
): string[] {
  const args = [
    bwrap,
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
  ]
  // As root, bwrap keeps every capability inside the sandbox, enough to remount `/` writable.
  args.push('--cap-drop', 'ALL')
  if (!policy.network) args.push('--unshare-net')
  for (const root of writable) args.push('--bind', root, root)
  args.push(...protectArgs(readOnly, hidden, writable, control))
  return args
}

/** A spawn server's bwrap prefix from a command's flags: the same flags without --as-pid-1 (bwrap's init is PID 1, the server PID 2). */
export function serverPrefix(flags: string[]): string[] {
  return [...flags.filter((arg) => arg !== '--as-pid-1'), '--']
}

/**
 * bwrap arguments (after the writable binds) that keep `readOnly` paths read-only and `hidden`
 * paths unreadable. A read-only directory holding hidden entries becomes a read-only tmpfs with
 * every other entry bound back read-only, so a credential file the harness creates later is not
 * visible either. A missing read-only path under a writable root is created (mode 0700) first, so
 * a command cannot create it.
 *
 * `control` paths (the project control files, `SandboxPolicy.controlPaths`) are bound read-only
 * where they exist under a writable root; a missing one is left alone, since a mount point for it
 * would be an empty file or directory in the user's tree (see the README's Known Limitations).
 *
 * A bind mount only pins its own path: a directory that merely contains one can still be renamed
 * away and rebuilt with a fresh file in the old place (`mv .git .git2; mkdir .git; echo ... >
 * .git/config`). So every directory between the outermost writable root and a protected path is
 * bound onto itself first (still writable, but a mount point, which rename and rmdir refuse).
 */
export function protectArgs(
  readOnly: readonly string[],
  hidden: readonly string[],
  writable: readonly string[],
  control: readonly string[] = [],
): string[] {
  const args: string[] = []
  const isDir = (path: string) => {
    try {
      return statSync(path).isDirectory()
    } catch {
      return false
    }
  }
  const covered = new Set<string>()
  for (const path of readOnly) {
    if (!existsSync(path) && writable.some((root) => within(path, root)))
      mkdirSync(path, { recursive: true, mode: 0o700 })
  }
  // A path inside another protected path is read-only with it (and its mount point could not be
  // created inside the read-only parent).
  const outermost = [...new Set(readOnly)].filter(
    (path, _, all) => existsSync(path) && !all.some((other) => other !== path && within(path, other)),
  )
  const controlled = controlTargets(control, writable, outermost)
  for (const dir of pinDirs([...outermost, ...controlled], writable)) args.push('--bind', dir, dir)
  for (const path of outermost) {
    const inside = hidden.filter((entry) => dirname(entry) === path)
    if (inside.length === 0 || !isDir(path)) {
      args.push('--ro-bind', path, path)
      continue
    }
    for (const entry of inside) covered.add(entry)
    args.push('--tmpfs', path)
    for (const name of readdirSync(path)) {
      const full = join(path, name)
      if (!inside.includes(full)) args.push('--ro-bind-try', full, full)
    }
    args.push('--remount-ro', path)
  }
  for (const path of controlled) args.push('--ro-bind', path, path)
  for (const path of hidden) {
    if (covered.has(path) || !existsSync(path)) continue
    if (isDir(path)) args.push('--tmpfs', path, '--remount-ro', path)
    else args.push('--ro-bind', '/dev/null', path)
  }
  return args
}

/**
 * The control paths to bind read-only: those that exist (symlinks resolved: a mount lands on the
 * link's target) under a writable root and outside the read-only paths (already covered); only
 * the outermost ones.
 */
export function controlTargets(
  control: readonly string[],
  writable: readonly string[],
  readOnly: readonly string[] = [],
): string[] {
  const present = [
    ...new Set(control.map(realpathOrUndefined).filter((path): path is string => path !== undefined && path !== '/')),
  ].filter((path) => writable.some((root) => within(path, root)) && !readOnly.some((other) => within(path, other)))
  return present.filter((path) => !present.some((other) => other !== path && within(path, other)))
}

/**
 * Every directory strictly between the outermost writable root holding a protected path and that
 * path, shallowest first, to be bound onto itself (see protectArgs). Binds are recursive and
 * bwrap takes them from the host's view, so a later, shallower bind would hide the ones below
 * it: the order matters.
 */
export function pinDirs(protectedPaths: readonly string[], writable: readonly string[]): string[] {
  const pins = new Set<string>()
  for (const path of protectedPaths) {
    const roots = writable.filter((root) => root !== path && within(path, root))
    if (roots.length === 0) continue
    const outer = roots.reduce((a, b) => (b.length < a.length ? b : a))
    for (let dir = dirname(path); dir !== outer && within(dir, outer) && dir !== dirname(dir); dir = dirname(dir))
      pins.add(dir)
  }
  // Ties by plain code-unit order: the same on every locale, and it does not load ICU's collator
  // (localeCompare did: ~5 % of a one-shot's instructions when the home sits under /tmp).
  return [...pins].sort((a, b) => a.split(sep).length - b.split(sep).length || (a < b ? -1 : a > b ? 1 : 0))
}

function realpathOrUndefined(path: string): string | undefined {
  // Most control paths do not exist: no exception per path (existsSync does not throw).
  if (!existsSync(path)) return undefined
  try {
    return realpathSync.native(path)
  } catch {
    return undefined
  }
}
