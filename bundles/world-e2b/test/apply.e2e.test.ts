// End-to-end: `dsh -p --world e2b --apply` through the real bin, E2B played by @dsh/e2b-standin and
// the model by @dsh/llm-mock-server. The sandbox's change comes back as a saved patch; --apply
// applies it to the local tree with git (checked first), a patch that no longer applies changes
// nothing and stays saved, and without --apply the exact command that applies it is printed.
import { execFileSync } from 'node:child_process'
import { existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { startMockServer, type MockServer } from '@dsh/llm-mock-server'
import { runDsh } from '@dsh/cli-testkit'
import { startE2bStandin, type E2bStandin } from '@dsh/e2b-standin'

let standin: E2bStandin
let server: MockServer | undefined
beforeAll(async () => {
  standin = await startE2bStandin()
})
afterAll(async () => {
  await standin.close()
})
afterEach(async () => {
  await server?.close()
  server = undefined
})

function workspace() {
  const cwd = mkdtempSync(join(tmpdir(), 'dsh-e2b-apply-'))
  writeFileSync(join(cwd, 'notes.txt'), 'alpha\nbeta\n')
  writeFileSync(join(cwd, '.gitignore'), 'home/\n')
  return { home: join(cwd, 'home'), cwd }
}

const env = (home: string, s: MockServer) => ({
  DSH_HOME: home,
  DEEPSEEK_BASE_URL: s.baseURL,
  DEEPSEEK_API_KEY: 'sk-test-not-a-real-key',
  ...standin.env,
})

/** A model that edits notes.txt and creates added.txt, in the sandbox. */
const editing = () =>
  startMockServer({
    steps: [
      { toolCalls: [{ name: 'read', arguments: { file_path: 'notes.txt' } }] },
      {
        toolCalls: [{ name: 'edit', arguments: { file_path: 'notes.txt', old_string: 'beta', new_string: 'gamma' } }],
      },
      { toolCalls: [{ name: 'write', arguments: { file_path: 'added.txt', content: 'new file\n' } }] },
      { text: 'Done remotely.' },
    ] as never,
  })

describe('dsh -p --world e2b --apply', () => {
  it('applies the saved patch to the local tree after the run', async () => {
    const { home, cwd } = workspace()
    const s = (server = await editing())
    const run = await runDsh(['-p', '--world', 'e2b', '--apply', 'edit notes'], {
      cwd,
      env: env(home, s),
      timeoutMs: 90_000,
    })
    expect(run, run.stderr).toMatchObject({ code: 0, stdout: 'Done remotely.\n' })
    const line = /^dsh: applied the patch (\S+) to (\S+) \(([^)]*)\)\n$/.exec(run.stderr)
    expect(line, run.stderr).not.toBeNull()
    const [, file, dir, files] = line as RegExpExecArray
    expect(dir).toBe(cwd)
    expect(files.split(', ').sort()).toEqual(['added.txt', 'notes.txt'])
    expect(readFileSync(join(cwd, 'notes.txt'), 'utf8')).toBe('alpha\ngamma\n')
    expect(readFileSync(join(cwd, 'added.txt'), 'utf8')).toBe('new file\n')
    // The patch stays where it was saved.
    expect(file.startsWith(join(home, 'e2b-patches'))).toBe(true)
    expect(existsSync(file)).toBe(true)
  }, 60_000)

  it('without --apply prints the exact command that applies it, and that command works', async () => {
    const { home, cwd } = workspace()
    const s = (server = await editing())
    const run = await runDsh(['-p', '--world', 'e2b', 'edit notes'], { cwd, env: env(home, s), timeoutMs: 90_000 })
    expect(run, run.stderr).toMatchObject({ code: 0, stdout: 'Done remotely.\n' })
    const line =
      /^dsh: the E2B sandbox i[0-9a-f]+ changed the workspace; patch saved to (\S+) \(review it, then apply it with: (git -C \S+ apply \S+)\)\n$/.exec(
        run.stderr,
      )
    expect(line, run.stderr).not.toBeNull()
    const [, file, command] = line as RegExpExecArray
    expect(command).toBe(`git -C ${cwd} apply ${file}`)
    // Nothing changed locally until the user runs it.
    expect(readFileSync(join(cwd, 'notes.txt'), 'utf8')).toBe('alpha\nbeta\n')
    expect(existsSync(join(cwd, 'added.txt'))).toBe(false)
    const [git, ...args] = command.split(' ')
    execFileSync(git, args, { cwd: tmpdir() })
    expect(readFileSync(join(cwd, 'notes.txt'), 'utf8')).toBe('alpha\ngamma\n')
    expect(readFileSync(join(cwd, 'added.txt'), 'utf8')).toBe('new file\n')
  }, 60_000)

  it('a patch that no longer applies is one sentence naming the file; nothing is half-applied', async () => {
    const { home, cwd } = workspace()
    const s = (server = await editing())
    // The run kills its sandbox after saving the patch and before applying it: the local tree
    // changes in that window, as if the user edited notes.txt meanwhile.
    const hold = standin.hold('DELETE', '/sandboxes/')
    const running = runDsh(['-p', '--world', 'e2b', '--apply', 'edit notes'], {
      cwd,
      env: env(home, s),
      timeoutMs: 90_000,
    })
    const stop = await Promise.race([hold.arrived, running.then(() => undefined)])
    expect(stop).toBeDefined()
    writeFileSync(join(cwd, 'notes.txt'), 'alpha\ndelta\n')
    hold.release()
    const run = await running
    expect(run.code, run.stderr).toBe(1)
    expect(run.stdout).toBe('Done remotely.\n')
    const line =
      /^dsh: the patch (\S+) no longer applies to (\S+) \((.*)\); nothing was changed; the patch stays at (\S+) to retry\n$/.exec(
        run.stderr,
      )
    expect(line, run.stderr).not.toBeNull()
    const [, file, dir, why, kept] = line as RegExpExecArray
    expect(dir).toBe(cwd)
    expect(why).toMatch(/^notes\.txt: /)
    expect(kept).toBe(file)
    expect(existsSync(file)).toBe(true)
    // Nothing of it was applied: the new file of the same patch is absent, the edit is the user's.
    expect(existsSync(join(cwd, 'added.txt'))).toBe(false)
    expect(readFileSync(join(cwd, 'notes.txt'), 'utf8')).toBe('alpha\ndelta\n')
  }, 60_000)

  it('in a subdirectory of a git work tree, the patch lands in that subdirectory', async () => {
    const repo = mkdtempSync(join(tmpdir(), 'dsh-e2b-apply-repo-'))
    execFileSync('git', ['init', '-q', repo])
    const cwd = join(repo, 'sub')
    mkdirSync(cwd)
    writeFileSync(join(cwd, 'notes.txt'), 'alpha\nbeta\n')
    writeFileSync(join(cwd, '.gitignore'), 'home/\n')
    const home = join(cwd, 'home')
    const s = (server = await editing())
    const run = await runDsh(['-p', '--world', 'e2b', '--apply', 'edit notes'], {
      cwd,
      env: env(home, s),
      timeoutMs: 90_000,
    })
    expect(run, run.stderr).toMatchObject({ code: 0, stdout: 'Done remotely.\n' })
    expect(run.stderr).toMatch(/^dsh: applied the patch \S+ to \S+ \(/)
    // git apply from a subdirectory would skip paths it reads as outside it: the prefix keeps them in.
    expect(readFileSync(join(cwd, 'notes.txt'), 'utf8')).toBe('alpha\ngamma\n')
    expect(readFileSync(join(cwd, 'added.txt'), 'utf8')).toBe('new file\n')
    expect(existsSync(join(repo, 'notes.txt'))).toBe(false)
  }, 60_000)

  it('--apply without --world e2b is a one-line usage error', async () => {
    const { home, cwd } = workspace()
    const s = (server = await startMockServer({ steps: [{ text: 'never' }] as never }))
    const run = await runDsh(['-p', '--apply', 'edit notes'], { cwd, env: env(home, s), timeoutMs: 60_000 })
    expect(run.code).toBe(2)
    expect(run.stderr).toBe(
      "dsh: --apply needs --world e2b (it applies the remote sandbox's change to this directory); the local world changes files in place\n",
    )
    expect(s.requests).toHaveLength(0)
    // The help names the flag and what it needs.
    const help = await runDsh(['-p', '--help'], { cwd, env: env(home, s), timeoutMs: 60_000 })
    expect(help.code).toBe(0)
    expect(help.stdout).toMatch(/^ {2}--apply {14}with --world e2b: after the run, apply the sandbox's change/m)
  }, 60_000)
})
