// The stand-in answers the real `e2b` SDK: control plane, commands (streaming, stdin, signals) and
// files, with commands confined to the sandbox's own root.
import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { Sandbox, CommandExitError, AuthenticationError, SandboxError } from 'e2b'
import { startE2bStandin, type E2bStandin } from '../src/index.ts'

let standin: E2bStandin
const opts = () => ({ apiKey: standin.apiKey, apiUrl: standin.url, sandboxUrl: standin.url })

beforeAll(async () => {
  standin = await startE2bStandin()
})
afterAll(async () => {
  await standin.close()
})

describe('e2b-standin', () => {
  it('creates, lists, times out and kills sandboxes through the SDK', async () => {
    const sandbox = await Sandbox.create({ ...opts(), metadata: { who: 'test' } })
    expect(standin.get(sandbox.sandboxId)).toBeDefined()
    const listed = await Sandbox.list(opts()).nextItems()
    expect(listed.map((s) => s.sandboxId)).toContain(sandbox.sandboxId)
    expect(listed.find((s) => s.sandboxId === sandbox.sandboxId)?.metadata).toEqual({ who: 'test' })
    await sandbox.setTimeout(60_000)
    expect(await sandbox.isRunning()).toBe(true)
    expect(await Sandbox.kill(sandbox.sandboxId, opts())).toBe(true)
    expect(standin.get(sandbox.sandboxId)).toBeUndefined()
    expect(await Sandbox.kill(sandbox.sandboxId, opts())).toBe(false)
  })

  it('runs commands in the sandbox root, not on the host', async () => {
    const sandbox = await Sandbox.create(opts())
    const result = await sandbox.commands.run('echo hi > /tmp/where && pwd && cat /tmp/where && echo err >&2')
    expect(result.stdout).toBe('/home/user\nhi\n')
    expect(result.stderr).toBe('err\n')
    expect(readFileSync(join(standin.rootOf(sandbox.sandboxId), 'tmp/where'), 'utf8')).toBe('hi\n')
    await expect(sandbox.commands.run('exit 3')).rejects.toBeInstanceOf(CommandExitError)
    await sandbox.kill()
  })

  it('streams output, takes stdin and signals', async () => {
    const sandbox = await Sandbox.create(opts())
    const chunks: string[] = []
    const handle = await sandbox.commands.run('cat', {
      background: true,
      stdin: true,
      onStdout: (d) => void chunks.push(d),
    })
    await handle.sendStdin('one\n')
    await expect.poll(() => chunks.join('')).toBe('one\n')
    await handle.closeStdin()
    expect((await handle.wait()).exitCode).toBe(0)
    const sleeper = await sandbox.commands.run('sleep 30', { background: true })
    expect((await sandbox.commands.list()).map((p) => p.pid)).toContain(sleeper.pid)
    expect(await sleeper.kill()).toBe(true)
    await expect(sleeper.wait()).rejects.toThrow()
    await sandbox.kill()
  })

  it('drops a process stream on request; the process keeps running and the next call works', async () => {
    const sandbox = await Sandbox.create(opts())
    const drop = standin.dropStream('dropped-marker')
    const chunks: string[] = []
    const handle = await sandbox.commands.run('echo first; sleep 30; echo dropped-marker', {
      background: true,
      onStdout: (d) => void chunks.push(d),
    })
    const error = await handle.wait().then(
      () => undefined,
      (e: unknown) => e as Error,
    )
    expect(error).toBeInstanceOf(Error)
    expect(chunks.join('')).toBe('first\n')
    expect((await drop.dropped).sandboxId).toBe(sandbox.sandboxId)
    // The process outlived its stream, and the sandbox answers the next call.
    expect((await sandbox.commands.list()).map((p) => p.pid)).toContain(handle.pid)
    expect((await sandbox.commands.run('echo next')).stdout).toBe('next\n')
    await sandbox.kill()
  })

  it('reads, writes, lists, moves and removes files', async () => {
    const sandbox = await Sandbox.create(opts())
    await sandbox.files.write('/work/a/b.txt', 'bytes')
    expect(await sandbox.files.read('/work/a/b.txt')).toBe('bytes')
    expect((await sandbox.files.list('/work/a')).map((e) => e.name)).toEqual(['b.txt'])
    expect((await sandbox.files.getInfo('/work/a/b.txt')).size).toBe(5)
    await sandbox.files.rename('/work/a/b.txt', '/work/a/c.txt')
    expect(await sandbox.files.exists('/work/a/b.txt')).toBe(false)
    expect(await sandbox.files.makeDir('/work/d')).toBe(true)
    expect(await sandbox.files.makeDir('/work/d')).toBe(false)
    await sandbox.files.remove('/work/a')
    expect(await sandbox.files.exists('/work/a/c.txt')).toBe(false)
    // An absolute symlink resolves inside the root, never on the host.
    const victim = `/dsh-standin-victim-${sandbox.sandboxId}`
    await sandbox.commands.run(`ln -s ${victim} /home/user/link`)
    await sandbox.files.write('/home/user/link', 'inside')
    expect(readFileSync(join(standin.rootOf(sandbox.sandboxId), victim), 'utf8')).toBe('inside')
    expect(existsSync(victim)).toBe(false)
    await sandbox.kill()
  })

  it('refuses a wrong key and reports a killed sandbox', async () => {
    await expect(Sandbox.create({ ...opts(), apiKey: 'e2b_0000' })).rejects.toBeInstanceOf(AuthenticationError)
    const sandbox = await Sandbox.create(opts())
    const handle = await sandbox.commands.run('sleep 30', { background: true })
    standin.kill(sandbox.sandboxId)
    await expect(handle.wait()).rejects.toBeInstanceOf(SandboxError)
    await expect(sandbox.commands.run('true')).rejects.toThrow(/not running|not found/i)
  })
})
