// Checks of a wrap request that hold for every runner, and the path test the runners share.
import { isAbsolute, sep } from 'node:path'
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

