// A line process against a real child (test/fixtures/line-peer.mjs) started through the real
// process seam (`@dsh/subprocess-local`): what reaches onMessage and onNoise however stdout is cut
// into chunks, the start failures with their codes, the stderr tail, signals, and each step of a
// polite close (end of stdin, then SIGTERM to the group, then SIGKILL). The out-of-process
// providers (claude-code, codex) drive their children through it; mutation testing
// (`pnpm mutation subagent`) showed none of it pinned inside this package.
import { mkdtempSync, realpathSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { Context, type Fiber } from 'cordis'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import LocalSubprocess from '@dsh/subprocess-local'
import { type LineProcessOptions, startLineProcess } from '../src/line-process.ts'

const PEER = fileURLToPath(new URL('./fixtures/line-peer.mjs', import.meta.url))

let ctx: Context
let fiber: Fiber<Context>
let dir: string
beforeAll(async () => {
  dir = realpathSync(mkdtempSync(join(tmpdir(), 'dsh-line-process-')))
  ctx = new Context()
  fiber = ctx.plugin(LocalSubprocess, {} as never)
  await fiber
})
afterAll(async () => {
  await fiber.dispose()
  rmSync(dir, { recursive: true, force: true })
})

type Json = Record<string, unknown>

/** A started peer, with everything it sent and a way to wait for one message. */
async function peer(mode: 'polite' | 'deaf' | 'stubborn', extra: Partial<LineProcessOptions> = {}) {
  const messages: Json[] = []
  const noise: string[] = []
  const waiters: Array<{ test: (m: Json) => boolean; resolve: (m: Json) => void }> = []
  const proc = await startLineProcess({
    subprocess: ctx.subprocess,
    command: process.execPath,
    args: [PEER, mode],
    cwd: dir,
    env: { set: { LINE_PEER_VALUE: 'from the parent' } },
    onMessage(message) {
      messages.push(message as Json)
      for (const w of [...waiters])
        if (w.test(message as Json)) {
          waiters.splice(waiters.indexOf(w), 1)
          w.resolve(message as Json)
        }
    },
    onNoise: (line) => void noise.push(line),
    ...extra,
  })
  /** Resolves with the first message (already received or to come) that passes `test`. */
  const next = (test: (m: Json) => boolean) =>
    new Promise<Json>((resolve) => {
      const seen = messages.find(test)
      if (seen) resolve(seen)
      else waiters.push({ test, resolve })
    })
  const hello = await next((m) => 'hello' in m)
  return { proc, messages, noise, next, hello }
}

const b64 = (text: string | Buffer) => Buffer.from(text).toString('base64')

describe('startLineProcess', () => {
  it('starts the command with its arguments, cwd and environment; pid is the child', async () => {
    const { proc, hello } = await peer('polite')
    expect(hello).toEqual({ hello: proc.pid, cwd: dir, args: ['polite'], value: 'from the parent' })
    expect(proc.pid).toBeGreaterThan(0)
    await proc.close()
  })

  it('hands each JSON line to onMessage and every other non-blank line to onNoise, trimmed', async () => {
    const { proc, messages, noise, next } = await peer('polite')
    expect(proc.send({ echo: 'one' })).toBe(true)
    await next((m) => m.echo === 'one')
    // Several lines in one write, blank ones, padding, and a line that is not JSON.
    proc.send({ raw: [b64('  {"n":1}  \n\n   \nnot json\n{"n":2}\n{"n":'), b64('3}\n')], gapMs: 20 })
    await next((m) => m.n === 3)
    expect(messages.filter((m) => 'n' in m)).toEqual([{ n: 1 }, { n: 2 }, { n: 3 }])
    expect(noise).toEqual(['not json'])
    await proc.close()
  })

  it('joins a line cut across chunks, even inside a multi-byte character', async () => {
    const { proc, next } = await peer('polite')
    const line = Buffer.from('{"text":"a\u20acb \u00e9"}\n')
    const euro = line.indexOf(0xe2)
    // Three writes 20 ms apart: the line is cut inside the key and between the bytes of the euro sign.
    proc.send({
      raw: [b64(line.subarray(0, 4)), b64(line.subarray(4, euro + 1)), b64(line.subarray(euro + 1))],
      gapMs: 20,
    })
    expect(await next((m) => 'text' in m)).toEqual({ text: 'a\u20acb \u00e9' })
    await proc.close()
  })

  it('without onNoise, a line that is not JSON is skipped and the next one still arrives', async () => {
    const messages: unknown[] = []
    let resolve!: () => void
    const after = new Promise<void>((r) => (resolve = r))
    const proc = await startLineProcess({
      subprocess: ctx.subprocess,
      command: process.execPath,
      args: [PEER, 'polite'],
      cwd: dir,
      env: {},
      onMessage(message) {
        messages.push(message)
        if ((message as Json).after) resolve()
      },
    })
    proc.send({ raw: [b64('garbage\n{"after":true}\n')] })
    await after
    expect(messages.slice(1)).toEqual([{ after: true }])
    await proc.close()
  })

  it('a missing executable rejects with ENOENT, a missing directory with CWD_NOT_FOUND', async () => {
    const base = { subprocess: ctx.subprocess, args: [], env: {}, onMessage() {} }
    await expect(startLineProcess({ ...base, command: 'dsh-no-such-program', cwd: dir })).rejects.toMatchObject({
      code: 'ENOENT',
      message: expect.stringMatching(/^cannot start dsh-no-such-program: /),
    })
    await expect(
      startLineProcess({ ...base, command: process.execPath, cwd: join(dir, 'no-such-dir') }),
    ).rejects.toMatchObject({ code: 'CWD_NOT_FOUND', message: expect.stringMatching(/^cannot start /) })
  })

  it('stderrTail: the last three lines of the last 4000 characters of stderr', async () => {
    const { proc } = await peer('polite')
    proc.send({ stderr: `first\n${'A'.repeat(5000)}\nsecond\n\nthird\n` })
    proc.send({ exit: 3 })
    expect(await proc.exited).toEqual({ code: 3, signal: null })
    // 'first' fell out of the window; the blank line counts as a line.
    expect(proc.stderrTail()).toBe('second |  | third')
    const { proc: long } = await peer('polite')
    long.send({ stderr: `${'A'.repeat(5000)}\nend\n` })
    long.send({ exit: 0 })
    await long.exited
    // 4000 characters are kept: 'end\n' and 3995 of the As.
    expect(long.stderrTail()).toBe(`${'A'.repeat(3995)} | end`)
  })

  it('signal() reaches the child while it runs', async () => {
    const { proc, next } = await peer('deaf')
    proc.signal('SIGUSR2')
    await next((m) => m.got === 'SIGUSR2')
    proc.signal('SIGTERM')
    expect(await proc.exited).toEqual({ code: null, signal: 'SIGTERM' })
    // After the exit a signal is a no-op, not an error.
    proc.signal('SIGTERM')
    // Nothing on stderr: an empty tail.
    expect(proc.stderrTail()).toBe('')
  })

  describe('close', () => {
    it('a child that exits when stdin ends is not signalled, however long the grace', async () => {
      const { proc } = await peer('polite')
      await proc.close(60_000)
      expect(await proc.exited).toEqual({ code: 0, signal: null })
      expect(proc.send({ echo: 'late' })).toBe(false)
      // Closing again is a no-op.
      await proc.close()
    })

    it('a child that ignores the end of stdin gets SIGTERM after the grace; stdin is closed at once', async () => {
      const { proc } = await peer('deaf')
      const closing = proc.close(50)
      expect(proc.send({ echo: 'too late' })).toBe(false)
      await closing
      expect(await proc.exited).toEqual({ code: null, signal: 'SIGTERM' })
    })

    it('a child that ignores SIGTERM too is killed after killGraceMs', async () => {
      const { proc, next } = await peer('stubborn', { killGraceMs: 100 })
      await proc.close(50)
      await next((m) => m.got === 'SIGTERM')
      expect(await proc.exited).toEqual({ code: null, signal: 'SIGKILL' })
    })
  })
})
