// Checks of a wrap request that hold for every runner, and the path test the runners share.
import { existsSync, lstatSync, readlinkSync } from 'node:fs'
import { dirname, isAbsolute, resolve, sep } from 'node:path'
import { SandboxError, isSandboxMode, type SandboxPolicy, type SandboxWrapRequest } from '@dsh/sandbox'

/** `path` is `root` or lies below it (everything lies below `/`). */
export function within(path: string, root: string): boolean {
  return path === root || root === '/' || path.startsWith(root.endsWith(sep) ? root : root + sep)
}

/** Refuses a malformed argv, cwd or policy with INVALID_POLICY. */
export function checkRequest(request: SandboxWrapRequest): void {
  const { argv, cwd, policy } = request
  if (!Array.isArray(argv) || argv.length === 0 || !argv.every((arg) => typeof arg === 'string'))
    throw new SandboxError('INVALID_POLICY', 'argv must be a non-empty array of strings')
  if (typeof cwd !== 'string' || !isAbsolute(cwd))
    throw new SandboxError('INVALID_POLICY', 'cwd must be an absolute path')
  checkPolicy(policy)
}

function checkPolicy(policy: SandboxPolicy): void {
  if (policy === null || typeof policy !== 'object')
    throw new SandboxError('INVALID_POLICY', 'policy must be an object')
  if (!isSandboxMode(policy.mode))
    throw new SandboxError('INVALID_POLICY', `unknown sandbox mode ${JSON.stringify(policy.mode)}`)
  if (typeof policy.network !== 'boolean') throw new SandboxError('INVALID_POLICY', 'policy.network must be a boolean')
  if (
    !Array.isArray(policy.writableRoots) ||
    !policy.writableRoots.every((root) => typeof root === 'string' && isAbsolute(root))
  ) {
    throw new SandboxError('INVALID_POLICY', 'policy.writableRoots must be absolute paths')
  }
  if (policy.writableRoots.includes('/'))
    throw new SandboxError('INVALID_POLICY', 'a writable root of / is danger-full-access; say so with the mode')
}

/**
 * A writable root inside a protected path (the workspace inside the dsh home) would let a command
 * rewrite dsh's own configuration; no runner can make that safe.
 */
export function refuseWritableInsideProtected(writable: readonly string[], readOnly: readonly string[]): void {
  for (const path of readOnly) {
    const root = writable.find((candidate) => within(candidate, path))
    if (root !== undefined) {
      throw new SandboxError(
        'SANDBOX_UNAVAILABLE',
        `the writable root ${root} lies inside ${path}, which must stay read-only for confined commands (the dsh home or a configured read-only path), so the command was not run; start dsh in a directory outside ${path} or move DSH_HOME`,
      )
    }
  }
}

/**
 * A project control path reached through a symbolic link whose target does not exist (a `.git`
 * link to a missing git directory) cannot be protected: a mount needs an existing target, and a
 * confined command could create the target inside a writable root and plant hooks or
 * configuration that git or an editor outside the sandbox would run later. Such a command is not
 * run. A link whose target exists is bound read-only at the target; one pointing outside every
 * writable root needs nothing.
 */
export function refuseDanglingControlLinks(control: readonly string[], writable: readonly string[]): void {
  for (const path of control) {
    for (let entry = path; writable.some((root) => entry !== root && within(entry, root)); entry = dirname(entry)) {
      let link: ReturnType<typeof lstatSync>
      try {
        link = lstatSync(entry, { throwIfNoEntry: false })
      } catch {
        link = undefined // ENOTDIR: a file on the way (a `.git` file), looked at next
      }
      if (link === undefined) continue // missing: look at the directory holding it
      if (!link.isSymbolicLink() || existsSync(entry)) break // it exists, and so does everything above it
      let target: string
      try {
        target = resolve(dirname(entry), readlinkSync(entry))
      } catch {
        break
      }
      const root = writable.find((candidate) => within(target, candidate))
      if (root !== undefined) {
        throw new SandboxError(
          'SANDBOX_UNAVAILABLE',
          `${entry} is a symbolic link to ${target}, which does not exist and lies inside the writable root ${root}: a confined command could create it (and plant hooks or configuration that programs outside the sandbox run), so the command was not run; create ${target} or remove the link`,
        )
      }
      break
    }
  }
}
