// What a child in another process inherits from its parent (issue #35): the parent session's
// sandbox mode and resolved policy, the user's patch layers the parent booted from, and the
// delegation depth with its limit, carried across the process boundary in the environment.
// Also the two pieces every out-of-process provider shares: the environment it hands
// `ctx.subprocess` (scrubbed, plus exactly the named credentials), and the depth the service
// starts from when this process is itself a subagent.
import { existsSync, readFileSync, realpathSync } from 'node:fs'
import { dirname, join, sep } from 'node:path'
import type { Context } from 'cordis'
import type { Agent } from '@dsh/agent'
import type { SandboxMode, SandboxPolicy } from '@dsh/sandbox'
import type { EnvSpec } from '@dsh/subprocess'
import type {} from '@dsh/sandbox-policy'
import type {} from '@dsh/permission-presets'
import type {} from '@dsh/app-boot'
import type {} from '@dsh/credentials'
import { homeLayout } from '@dsh/home-paths'
import { dshRunDir } from '@dsh/spill-files'

/** Set by a parent for a child dsh: the depth that child runs at (1 for a child of a root agent). */
export const DEPTH_ENV = 'DSH_SUBAGENT_DEPTH'
/** Set by a parent for a child dsh: the deepest delegation the child may reach (the parent's limit). */
export const MAX_DEPTH_ENV = 'DSH_SUBAGENT_MAX_DEPTH'
/** Read by `@dsh/permission-presets` as the default preset; the built-in presets are named after the modes. */
export const MODE_ENV = 'DSH_PERMISSION_MODE'

export interface ChildInheritance {
  /** The parent session's sandbox mode (`ctx.sandboxPolicy`, else the permission preset, else workspace-write). */
  mode: SandboxMode
  /** The parent session's resolved policy (writable roots, network), when `ctx.sandboxPolicy` runs. */
  policy?: SandboxPolicy
  /** The user's own patch layers the parent booted from (its `--patch` files), absolute, in order. */
  patchFiles: string[]
  /** The home patch layer the parent booted from, if any (`dsh-acp` reads it itself; `dsh-jsonrpc-agent` does not). */
  homePatch?: string
  /** Depth the child runs at, and the limit it must keep. */
  depth: number
  maxDepth: number
  /** The variables a child dsh needs to inherit the above: mode, depth, limit. */
  env: Record<string, string>
}

/** The depth a process starts from: 0, or what the parent dsh set. Throws one line for a malformed value. */
export function inheritedDepth(env: NodeJS.ProcessEnv = process.env): { depth: number; maxDepth?: number } {
  const read = (name: string): number | undefined => {
    const raw = env[name]
    if (raw === undefined || raw.trim() === '') return undefined
    if (!/^\d{1,3}$/.test(raw.trim()))
      throw new Error(
        `${name} must be a whole number from 0 to 999 (got ${JSON.stringify(raw)}); it is set by a parent dsh for its subagent process`,
      )
    return Number(raw.trim())
  }
  const depth = read(DEPTH_ENV) ?? 0
  const maxDepth = read(MAX_DEPTH_ENV)
  return maxDepth === undefined ? { depth } : { depth, maxDepth }
}

const STRICTNESS: readonly SandboxMode[] = ['read-only', 'workspace-write', 'danger-full-access']

/** True when `mode` allows more than `floor`. */
export function looserThan(mode: SandboxMode, floor: SandboxMode): boolean {
  return STRICTNESS.indexOf(mode) > STRICTNESS.indexOf(floor)
}

/**
 * The mode a subagent process's sessions may not loosen: the parent's, from `DSH_PERMISSION_MODE`,
 * only when `DSH_SUBAGENT_DEPTH` says a parent dsh started this process. Undefined otherwise.
 * Throws one line for a value that is no sandbox mode.
 */
export function inheritedModeFloor(env: NodeJS.ProcessEnv = process.env): SandboxMode | undefined {
  if (inheritedDepth(env).depth === 0) return undefined
  const raw = env[MODE_ENV]?.trim()
  if (!raw) return undefined
  if (!(STRICTNESS as readonly string[]).includes(raw)) {
    throw new Error(
      `${MODE_ENV} must be one of ${STRICTNESS.join(', ')} in a subagent process (got ${JSON.stringify(raw)}); it is set by the parent dsh`,
    )
  }
  return raw as SandboxMode
}

/** The nearest package.json above `file` names a dsh package: a bundle's, a profile's or an app's own layer. */
function shippedLayer(file: string): boolean {
  let dir = dirname(file)
  for (let i = 0; i < 6; i++) {
    const pkg = join(dir, 'package.json')
    if (existsSync(pkg)) {
      try {
        const name = (JSON.parse(readFileSync(pkg, 'utf8')) as { name?: unknown }).name
        return typeof name === 'string' && name.startsWith('@dsh/')
      } catch {
        return false
      }
    }
    const up = dirname(dir)
    if (up === dir) break
    dir = up
  }
  return false
}

const real = (path: string) => {
  try {
    return realpathSync(path)
  } catch {
    return path
  }
}

/**
 * Splits the parent's boot layers into the home patch and the user's own layers (`--patch`
 * files). Shipped layers (bundles, the profile's, an app's) and layers of a profile directory are
 * left out: a child composes its own base, and repeating them would insert their rows twice.
 */
export function userLayers(
  layerFiles: readonly string[],
  home: string | undefined,
  profileDir: string | undefined,
): { patchFiles: string[]; homePatch?: string } {
  const homePatch = home ? real(homeLayout(home).patch) : undefined
  const profile = profileDir ? real(profileDir) + sep : undefined
  const patchFiles: string[] = []
  let foundHome: string | undefined
  for (const file of layerFiles) {
    const path = real(file)
    if (homePatch !== undefined && path === homePatch) {
      foundHome = path
      continue
    }
    if (profile !== undefined && path.startsWith(profile)) continue
    if (shippedLayer(path)) continue
    if (!patchFiles.includes(path)) patchFiles.push(path)
  }
  return foundHome ? { patchFiles, homePatch: foundHome } : { patchFiles }
}

/** What a child of `parent` at `depth` inherits, read from the parent's context. */
export function inheritanceOf(ctx: Context, parent: Agent, depth: number, maxDepth: number): ChildInheritance {
  const sessionId = parent.session.id
  const policyService = ctx.get('sandboxPolicy')
  let policy: SandboxPolicy | undefined
  let mode: SandboxMode
  if (policyService) {
    policy = policyService.resolve({ sessionId, cwd: parent.cwd })
    mode = policy.mode
  } else {
    mode = ctx.get('permissionPresets')?.modeFor(sessionId) ?? 'workspace-write'
  }
  const boot = ctx.get('bootInfo')
  const layers = boot
    ? userLayers(boot.layerFiles, boot.home || undefined, boot.profileDir || undefined)
    : { patchFiles: [] }
  return {
    mode,
    ...(policy ? { policy } : {}),
    ...layers,
    depth,
    maxDepth,
    env: { [MODE_ENV]: mode, [DEPTH_ENV]: String(depth), [MAX_DEPTH_ENV]: String(maxDepth) },
  }
}

/**
 * The environment of a child process: this process's minus credential-looking variables (the
 * subprocess seam's scrub), then the named credentials (read through `ctx.credentials` when it
 * runs, else from this process's environment; absent ones are skipped), then `extra` (the row's
 * own `env`, trusted) and the inheritance variables last, so no row can undo them.
 */
export async function childEnv(
  ctx: Context,
  credentials: readonly string[],
  extra: Record<string, string>,
  inherit?: ChildInheritance,
): Promise<EnvSpec> {
  const set: Record<string, string> = {}
  const store = ctx.get('credentials')
  for (const name of credentials) {
    let value: string | undefined
    try {
      value = store ? await store.get(name) : undefined
    } catch {
      value = undefined
    }
    value ??= process.env[name]
    if (value !== undefined && value !== '') set[name] = value
  }
  return { base: 'scrubbed', set: { ...set, ...extra, ...(inherit?.env ?? {}) } }
}

/** A generated patch layer a dsh child boots with last; `remove()` deletes it once the child ended. */
export interface PolicyLayer {
  file: string
  remove(): void
}

/**
 * The parent's resolved sandbox policy as a patch layer for a dsh child's `sandbox-policy` row:
 * network, writable roots, read-only and hidden paths exactly as the parent has them, wherever
 * they came from (a profile layer or a home patch the child does not read). Undefined when the
 * parent runs unconfined or has no policy service. Written through the spill seam into
 * `$DSH_HOME/run`, which confined commands cannot write (the child runs the layer's contents).
 */
export function writePolicyLayer(inherit: ChildInheritance): PolicyLayer | undefined {
  const policy = inherit.policy
  if (!policy || policy.mode === 'danger-full-access') return undefined
  const config = {
    defaultMode: policy.mode,
    network: policy.network,
    // The child adds its own workspace root (its session's cwd, the parent's); the rest, temp dirs
    // included, is listed as it resolved for the parent.
    writableRoots: policy.writableRoots.filter((root) => root !== policy.workspaceRoot),
    tempDirs: [],
    readOnlyPaths: policy.readOnlyPaths ?? [],
    hiddenPaths: policy.hiddenPaths ?? [],
  }
  // JSON is YAML flow syntax: no tags, nothing the layer loader would evaluate.
  const text = `# Generated by @dsh/subagent: the parent session's sandbox policy, for its subagent process.\n- id: sandbox-policy\n  config: ${JSON.stringify(config)}\n`
  const dir = dshRunDir().tempSubdir('subagent-')
  const file = dir.writeFile('policy.patch.yml', text)
  return { file, remove: () => dir.remove() }
}
