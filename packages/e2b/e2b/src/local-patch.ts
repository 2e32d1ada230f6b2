// Applying a saved end-of-run patch to the local tree, through this machine's process seam (the
// e2b row's isolated local `subprocess`, never the sandbox's): `git apply`, checked first.
import { runSafeGit, type SubprocessService } from '@dsh/subprocess'
import { firstLine, patchFiles, quote, readFileSafe } from './util.ts'

/** `git apply --check`, then `git apply`, of a saved patch in the local tree `dir`. */
export async function applyPatch(
  host: SubprocessService | undefined,
  file: string,
  dir: string,
): Promise<{ ok: boolean; line: string }> {
  const files = patchFiles(readFileSafe(file))
  const named = files.length > 0 ? files.join(', ') : 'no files'
  const keep = `nothing was changed; the patch stays at ${file} to retry`
  if (!host)
    return {
      ok: false,
      line: `the patch ${file} was not applied: no local process seam to run git with (the world-e2b bundle loads one); ${keep}`,
    }
  const prefix = await repoPrefix(host, dir)
  const args = [...(prefix ? [`--directory=${prefix}`] : []), file]
  const check = await runSafeGit(host, ['apply', '--check', ...args], { cwd: dir })
  if (check.code !== 0) {
    const failing = [...check.stderr.matchAll(/error: (?:patch failed: |)([^:\n]+?)(?::\d+)?(?:: .*)?$/gm)]
      .map((m) => m[1].trim())
      .filter((name, i, all) => name && all.indexOf(name) === i)
    const which = failing.length > 0 ? failing.join(', ') : named
    return {
      ok: false,
      line: `the patch ${file} no longer applies to ${dir} (${which}: ${firstLine(check.stderr) || 'git apply --check failed'}); ${keep}`,
    }
  }
  const applied = await runSafeGit(host, ['apply', ...args], { cwd: dir })
  if (applied.code !== 0)
    return {
      ok: false,
      line: `the patch ${file} could not be applied to ${dir} (${firstLine(applied.stderr) || `git exited ${applied.code}`}); the patch stays at ${file}`,
    }
  return { ok: true, line: `applied the patch ${file} to ${dir} (${named})` }
}

/** The exact command that applies `file` to `dir` (what `--apply` would run). */
export async function applyCommand(host: SubprocessService | undefined, file: string, dir: string): Promise<string> {
  const prefix = host ? await repoPrefix(host, dir) : ''
  return `git -C ${quote(dir)} apply${prefix ? ` --directory=${quote(prefix)}` : ''} ${quote(file)}`
}

/** `dir`'s path inside its git work tree ('' at the top, or outside any repository). */
export async function repoPrefix(host: SubprocessService, dir: string): Promise<string> {
  const result = await runSafeGit(host, ['rev-parse', '--show-prefix'], { cwd: dir })
  return result.code === 0 ? result.stdout.trim().replace(/\/$/, '') : ''
}
