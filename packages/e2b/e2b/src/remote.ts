// The e2b world's work inside a sandbox: uploading the workspace, and the private baseline
// repository (outside the tree) that the end-of-run patch is taken against.
import type { Sandbox } from 'e2b'
import { randomBytes } from 'node:crypto'
import { mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { packUpload, planUpload, UploadTooLarge } from './upload.ts'
import { E2bError, type E2bConfig, REMOTE_STATE_DIR } from './types.ts'
import { quote } from './util.ts'

/** Where a sandbox call runs: its remote working directory and the timeout of one request. */
export interface RemoteTarget {
  cwd: string
  requestTimeoutMs: number
}

/** git on the baseline repository, with the remote working directory as its work tree. */
export function git(cwd: string): string {
  return `git --git-dir=${REMOTE_STATE_DIR}/baseline.git --work-tree=${quote(cwd)}`
}

/** A private git repository (outside the tree) recording the working directory as it started. */
export async function baseline(sandbox: Sandbox, target: RemoteTarget, signal?: AbortSignal): Promise<void> {
  const g = git(target.cwd)
  await sandbox.commands.run(
    `mkdir -p ${REMOTE_STATE_DIR} && ${g} init -q && ${g} add -A && ${g} -c user.name=dsh -c user.email=dsh@localhost commit -q --allow-empty -m baseline`,
    { user: 'root', requestTimeoutMs: target.requestTimeoutMs, ...(signal ? { signal } : {}) },
  )
}

export async function advanceBaseline(sandbox: Sandbox, target: RemoteTarget): Promise<void> {
  const g = git(target.cwd)
  await sandbox.commands.run(
    `${g} add -A && ${g} -c user.name=dsh -c user.email=dsh@localhost commit -q --allow-empty -m patched`,
    { user: 'root', requestTimeoutMs: target.requestTimeoutMs },
  )
}

/**
 * The change the sandbox made to its working directory since the baseline, as a binary git
 * patch saved in `dir` (when known); nothing is applied. Returns the file, or undefined when
 * nothing changed.
 */
export async function savePatch(
  sandbox: Sandbox,
  target: RemoteTarget,
  dir: string | undefined,
): Promise<string | undefined> {
  const g = git(target.cwd)
  const result = await sandbox.commands.run(`${g} add -A && ${g} diff --cached --binary HEAD`, {
    user: 'root',
    requestTimeoutMs: target.requestTimeoutMs,
  })
  if (result.stdout.trim() === '') return undefined
  if (!dir) return undefined
  mkdirSync(dir, { recursive: true, mode: 0o700 })
  const file = join(dir, `${sandbox.sandboxId}.patch`)
  writeFileSync(file, result.stdout, { mode: 0o600 })
  return file
}

/**
 * The files of `local` to upload, within `upload.maxBytes`. A tree too large is a lasting failure:
 * it is recorded in `state.fatal`, so later uses fail at once with the same sentence.
 */
export function plan(
  local: string,
  upload: E2bConfig['upload'],
  state: { fatal?: E2bError },
): ReturnType<typeof planUpload> {
  try {
    return planUpload(local, { maxBytes: upload.maxBytes, exclude: upload.exclude })
  } catch (error) {
    // The tree does not shrink by itself: later uses fail at once with the same sentence.
    if (error instanceof UploadTooLarge)
      throw (state.fatal = new E2bError('UPLOAD_TOO_LARGE', error.message, { cause: error }))
    throw new E2bError('UPLOAD_FAILED', `the workspace could not be read for upload: ${(error as Error).message}`, {
      cause: error,
    })
  }
}

/** Packs the planned files, uploads one archive and unpacks it into the remote working directory. */
export async function send(
  sandbox: Sandbox,
  target: RemoteTarget,
  local: string,
  planned: ReturnType<typeof planUpload>,
  signal: AbortSignal,
): Promise<void> {
  const archive = `${REMOTE_STATE_DIR}/workspace-${randomBytes(6).toString('hex')}.tgz`
  try {
    const bytes = await packUpload(local, planned, signal)
    await sandbox.files.write(archive, bytes.slice().buffer as ArrayBuffer, {
      requestTimeoutMs: Math.max(target.requestTimeoutMs, 120_000),
      signal,
    })
    await sandbox.commands.run(
      `tar -xzf ${archive} -C ${quote(target.cwd)} && rm -f ${archive} && chown -R user ${quote(target.cwd)} 2>/dev/null; true`,
      { user: 'root', requestTimeoutMs: target.requestTimeoutMs, signal },
    )
  } catch (error) {
    if (signal.aborted) throw error
    throw new E2bError(
      'UPLOAD_FAILED',
      `the workspace could not be uploaded to the E2B sandbox ${sandbox.sandboxId}: ${(error as Error).message.split('\n')[0]}`,
      { cause: error },
    )
  }
}

/**
 * Readies a new or reconnected sandbox: the remote working directory (it mirrors the local path,
 * which a fresh template does not have), the workspace upload when one was planned, and the
 * baseline when asked. Resolves to whether the baseline was recorded: without git in the template
 * there is no patch at the end (`onNoBaseline` hears why), and the world still works.
 */
export async function prepare(
  sandbox: Sandbox,
  target: RemoteTarget,
  local: string,
  opts: {
    upload?: ReturnType<typeof planUpload>
    signal: AbortSignal
    baseline: boolean
    onPhase: (phase: string) => void
    onNoBaseline: (error: unknown) => void
  },
): Promise<boolean> {
  const { upload, signal } = opts
  await sandbox.commands.run(`mkdir -p ${quote(target.cwd)} && chown user ${quote(target.cwd)} 2>/dev/null; true`, {
    user: 'root',
    requestTimeoutMs: target.requestTimeoutMs,
    signal,
  })
  if (upload && upload.files.length > 0) {
    opts.onPhase('uploading the workspace')
    await send(sandbox, target, local, upload, signal)
    opts.onPhase('preparing the E2B sandbox')
  }
  if (!opts.baseline) return false
  return baseline(sandbox, target, signal).then(
    () => true,
    (error: unknown) => {
      opts.onNoBaseline(error)
      return false
    },
  )
}

/**
 * For a review while the sandbox keeps running (the web's approval): the change since the baseline
 * saved as `name`.patch in `dir`, and the git tree it was taken from, so settling it moves the
 * baseline to exactly what was reviewed (a change made after the review stays for the next one).
 */
export async function snapshot(
  sandbox: Sandbox,
  target: RemoteTarget,
  dir: string,
  name: string,
): Promise<{ file: string; tree: string; patch: string } | undefined> {
  const g = git(target.cwd)
  const result = await sandbox.commands.run(`${g} add -A && ${g} write-tree && ${g} diff --cached --binary HEAD`, {
    user: 'root',
    requestTimeoutMs: target.requestTimeoutMs,
  })
  const newline = result.stdout.indexOf('\n')
  const tree = result.stdout.slice(0, newline).trim()
  const patch = result.stdout.slice(newline + 1)
  if (!/^[0-9a-f]{40,64}$/.test(tree)) throw new Error(`git write-tree answered ${JSON.stringify(tree.slice(0, 80))}`)
  if (patch.trim() === '') return undefined
  mkdirSync(dir, { recursive: true, mode: 0o700 })
  const file = join(dir, `${name}.patch`)
  writeFileSync(file, patch, { mode: 0o600 })
  return { file, tree, patch }
}

/** Moves the baseline to `tree` (a reviewed snapshot): the next patch holds only what came after it. */
export async function advanceTo(sandbox: Sandbox, target: RemoteTarget, tree: string): Promise<void> {
  const g = git(target.cwd)
  await sandbox.commands.run(
    `${g} update-ref HEAD "$(${g} -c user.name=dsh -c user.email=dsh@localhost commit-tree ${quote(tree)} -p HEAD -m reviewed)"`,
    { user: 'root', requestTimeoutMs: target.requestTimeoutMs },
  )
}
