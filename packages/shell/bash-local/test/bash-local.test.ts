import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { Context } from 'cordis'
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { ShellError, type ShellSpec } from '@dsh/shell'
import LocalSubprocessService from '@dsh/subprocess-local'
import BashLocalExecutor, { MAX_COMMAND_BYTES } from '../src/index.ts'

let ctx: Context
let dir: string

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'dsh-bash-local-'))
  ctx = new Context()
  await ctx.plugin(LocalSubprocessService, {} as never)
  await ctx.plugin(BashLocalExecutor, {
    defaultTimeoutMs: 5_000,
    maxTimeoutMs: 10_000,
    killGraceMs: 200,
    output: { maxBytes: 4096, headBytes: 1024, tailBytes: 1024 },
    spillDir: join(dir, 'spill'),
  } as never)
})

afterAll(() => rmSync(dir, { recursive: true, force: true }))

const shell = () => ctx.shell
const run = async (command: string, extra: { timeoutMs?: number; workdir?: string; signal?: AbortSignal } = {}) => {
  const spec = await shell().resolve({ command, cwd: dir, workdir: extra.workdir, timeoutMs: extra.timeoutMs })
  return shell().run(spec, { signal: extra.signal })
}

async function refusal(promise: Promise<unknown>): Promise<ShellError> {
  try {
    await promise
  } catch (error) {
    expect(error).toBeInstanceOf(ShellError)
    return error as ShellError
  }
  throw new Error('expected a ShellError')
}

describe('bash-local resolve', () => {
  it('applies the default timeout and the model-friendly environment', async () => {
    const spec = await shell().resolve({ command: 'true', cwd: dir, env: { DSH_SHELL: '1', TERM: 'xterm' } })
    expect(spec).toMatchObject({ executor: 'bash-local', dialect: 'bash', cwd: dir, timeoutMs: 5_000, notes: [] })
    expect(spec.env).toMatchObject({
      PAGER: 'cat',
      GIT_PAGER: 'cat',
      NO_COLOR: '1',
      CI: '1',
      GIT_TERMINAL_PROMPT: '0',
      DEBIAN_FRONTEND: 'noninteractive',
    })
    // Request variables override the executor's own.
    expect(spec.env.TERM).toBe('xterm')
    expect(spec.env.DSH_SHELL).toBe('1')
  })

  it('caps a timeout above the maximum and says so', async () => {
    const spec = await shell().resolve({ command: 'true', cwd: dir, timeoutMs: 60_000 })
    expect(spec.timeoutMs).toBe(10_000)
    expect(spec.notes[0]).toMatch(/capped at 10000 ms/)
  })

  it('resolves a relative workdir against cwd and refuses a missing one', async () => {
    mkdirSync(join(dir, 'sub'), { recursive: true })
    expect((await shell().resolve({ command: 'true', cwd: dir, workdir: 'sub' })).cwd).toBe(join(dir, 'sub'))
    expect((await refusal(shell().resolve({ command: 'true', cwd: dir, workdir: 'missing' }))).code).toBe(
      'WORKDIR_NOT_FOUND',
    )
    writeFileSync(join(dir, 'file.txt'), 'x')
    expect((await refusal(shell().resolve({ command: 'true', cwd: dir, workdir: 'file.txt' }))).code).toBe(
      'WORKDIR_NOT_DIRECTORY',
    )
  })

  it('refuses bad requests with a stable code', async () => {
    expect((await refusal(shell().resolve({ command: '  ', cwd: dir }))).code).toBe('INVALID_REQUEST')
    expect((await refusal(shell().resolve({ command: 'true', cwd: 'relative' }))).code).toBe('INVALID_REQUEST')
    expect((await refusal(shell().resolve({ command: 'true', cwd: dir, timeoutMs: 0 }))).code).toBe('INVALID_REQUEST')
    expect((await refusal(shell().resolve({ command: 'true', cwd: dir, timeoutMs: 1.5 }))).code).toBe('INVALID_REQUEST')
    const long = await refusal(shell().resolve({ command: 'x'.repeat(MAX_COMMAND_BYTES + 1), cwd: dir }))
    expect(long.code).toBe('COMMAND_TOO_LONG')
    expect(long.message).toMatch(/Write the script to a file/)
  })

  it('refuses to run a spec another executor resolved', async () => {
    const foreign = {
      executor: 'other',
      dialect: 'bash',
      command: 'true',
      cwd: dir,
      timeoutMs: 1000,
      output: { maxBytes: 10, headBytes: 1, tailBytes: 1 },
      env: {},
      notes: [],
    } satisfies ShellSpec
    expect((await refusal(shell().run(foreign))).code).toBe('FOREIGN_SPEC')
  })
})

describe('bash-local run', () => {
  it('reports the exit code and stdout/stderr merged', async () => {
    const result = await run('echo one; echo two >&2; exit 4')
    expect(result.status).toBe('exited')
    expect(result.exitCode).toBe(4)
    expect(result.output.head).toBe('one\ntwo\n')
    expect(result.output.truncated).toBe(false)
  })

  it('runs with the non-interactive environment and stdin closed', async () => {
    const result = await run(
      'echo "$PAGER $GIT_PAGER $NO_COLOR $TERM $CI $GIT_TERMINAL_PROMPT $DEBIAN_FRONTEND"; cat; echo "cat=$?"',
    )
    expect(result.output.head).toBe('cat cat 1 dumb 1 0 noninteractive\ncat=0\n')
  })

  it('times out, terminates the group and classifies it as a timeout', async () => {
    const result = await run('echo before; sleep 30; echo after', { timeoutMs: 300 })
    expect(result.status).toBe('timeout')
    expect(result.escalation).toBe('SIGTERM')
    expect(result.output.head).toBe('before\n')
  })

  it('escalates to SIGKILL when the command ignores SIGTERM', async () => {
    const result = await run(`trap '' TERM; sleep 30`, { timeoutMs: 200 })
    expect(result.status).toBe('timeout')
    expect(result.escalation).toBe('SIGKILL')
  })

  it('cancels mid-command through the AbortSignal', async () => {
    const controller = new AbortController()
    const spec = await shell().resolve({ command: 'echo started; sleep 30', cwd: dir })
    const chunks: string[] = []
    const pending = shell().run(spec, {
      signal: controller.signal,
      onOutput: (chunk) => {
        chunks.push(chunk.text)
        controller.abort()
      },
    })
    const result = await pending
    expect(result.status).toBe('cancelled')
    expect(chunks.join('')).toBe('started\n')
  })

  it('does not start a command whose signal is already aborted', async () => {
    const marker = join(dir, 'never-created')
    const result = await run(`touch '${marker}'`, { signal: AbortSignal.abort() })
    expect(result.status).toBe('cancelled')
    expect(() => statSync(marker)).toThrow()
  })

  it('decodes non-UTF-8 output with replacement characters', async () => {
    const result = await run(`printf 'a\\xffb\\xc3'`)
    expect(result.output.head).toBe('a\uFFFDb\uFFFD')
  })

  it('runs in a directory whose name has spaces and unicode', async () => {
    const odd = join(dir, 'a b ✓ é')
    mkdirSync(odd)
    const result = await run('pwd; ls', { workdir: 'a b ✓ é' })
    expect(result.output.head).toBe(`${odd}\n`)
  })

  it('keeps head and tail of long output and the whole of it in a spill file', async () => {
    const result = await run('seq 1 20000')
    const whole = Array.from({ length: 20000 }, (_, i) => `${i + 1}\n`).join('')
    expect(result.output.truncated).toBe(true)
    expect(result.output.totalBytes).toBe(Buffer.byteLength(whole))
    expect(whole.startsWith(result.output.head)).toBe(true)
    expect(whole.endsWith(result.output.tail)).toBe(true)
    expect(result.output.omittedBytes).toBe(Buffer.byteLength(whole) - 2048)
    expect(readFileSync(result.output.spillPath!, 'utf8')).toBe(whole)
  })

  it('merges stdout and stderr in the order the command wrote them', async () => {
    const result = await run('for i in 1 2 3 4 5 6 7 8; do echo out$i; echo err$i >&2; done')
    expect(result.output.head).toBe([1, 2, 3, 4, 5, 6, 7, 8].map((i) => `out${i}\nerr${i}\n`).join(''))
  })

  it('runs bash itself (no sh in front): one process, stderr merged by bash, BASH_ENV not left behind', async () => {
    const spawned: Array<{ file: string; stderr?: string; bashEnv?: string }> = []
    const spawn = ctx.subprocess.spawn.bind(ctx.subprocess)
    ;(ctx.subprocess as { spawn: typeof spawn }).spawn = (spec) => (
      spawned.push({ file: spec.file, stderr: spec.stderr, bashEnv: spec.env?.set?.BASH_ENV }), spawn(spec)
    )
    try {
      // The syntax error comes from parsing the command, after the startup file ran: merged too.
      const result = await run(
        'echo "[$BASH_ENV]"; echo out; echo err >&2; bash -c \'echo nested >&2\' 2>/dev/null\necho (',
      )
      expect(result.output.head).toMatch(
        /^\[\]\nout\nerr\n\S*bash: -c: line 2: syntax error near unexpected token `newline'\n\S*bash: -c: line 2: `echo \('\n$/,
      )
      expect(spawned).toHaveLength(1)
      expect(spawned[0].file).toBe('bash')
      expect(spawned[0].stderr).toBe('pipe')
      expect(readFileSync(spawned[0].bashEnv!, 'utf8')).toBe('exec 2>&1\nunset BASH_ENV\n')
      expect(statSync(join(spawned[0].bashEnv!, '..')).mode & 0o077).toBe(0)
      // A temp cleaner removed the file: it is written again, order still kept.
      rmSync(join(spawned[0].bashEnv!, '..'), { recursive: true, force: true })
      expect((await run('echo a; echo b >&2; echo c')).output.head).toBe('a\nb\nc\n')
      expect(existsSync(spawned[1].bashEnv!)).toBe(true)
    } finally {
      ;(ctx.subprocess as { spawn: typeof spawn }).spawn = spawn
    }
  })

  it('keeps a BASH_ENV the caller set and merges with the sh wrapper instead', async () => {
    writeFileSync(join(dir, 'own-env.sh'), 'OWN=yes\n')
    const spec = await shell().resolve({
      command: 'echo "own=$OWN"; echo e >&2; echo f',
      cwd: dir,
      env: { BASH_ENV: join(dir, 'own-env.sh') },
    })
    const result = await shell().run(spec)
    expect(result.output.head).toBe('own=yes\ne\nf\n')
  })

  it('removes its startup file when the executor is unloaded', async () => {
    const local = new Context()
    await local.plugin(LocalSubprocessService, {} as never)
    const fiber = local.plugin(BashLocalExecutor, { spillDir: join(dir, 'spill2') } as never)
    await fiber
    let file: string | undefined
    const spawn = local.subprocess.spawn.bind(local.subprocess)
    ;(local.subprocess as { spawn: typeof spawn }).spawn = (spec) => ((file = spec.env?.set?.BASH_ENV), spawn(spec))
    const spec = await local.shell.resolve({ command: 'echo x >&2', cwd: dir })
    expect((await local.shell.run(spec)).output.head).toBe('x\n')
    expect(existsSync(file!)).toBe(true)
    await fiber.dispose()
    expect(existsSync(join(file!, '..'))).toBe(false)
  })

  it('follows the caller output budget, capped by the configured maximum', async () => {
    const spec = await shell().resolve({
      command: 'seq 1 1000',
      cwd: dir,
      output: { maxBytes: 100, headBytes: 20, tailBytes: 10 },
    })
    expect(spec.output).toEqual({ maxBytes: 100, headBytes: 20, tailBytes: 10 })
    const result = await shell().run(spec)
    expect(result.output.head).toBe('1\n2\n3\n4\n5\n6\n7\n8\n9\n10')
    expect(result.output.tail).toBe('\n999\n1000\n')
    const capped = await shell().resolve({
      command: 'true',
      cwd: dir,
      output: { maxBytes: 8192, headBytes: 4096, tailBytes: 4096 },
    })
    expect(capped.output).toEqual({ maxBytes: 4096, headBytes: 2048, tailBytes: 2048 })
    expect(capped.notes[0]).toMatch(/output budget capped at 4096 bytes/)
    expect(
      (
        await refusal(
          shell().resolve({ command: 'true', cwd: dir, output: { maxBytes: 10, headBytes: 8, tailBytes: 8 } }),
        )
      ).code,
    ).toBe('INVALID_REQUEST')
  })

  it('does not show a character split by the truncation cut as a replacement character', async () => {
    // 'é' is two bytes; a head of 5 bytes cuts the third 'é' in half.
    const spec = await shell().resolve({
      command: `printf 'éééééééééé'`,
      cwd: dir,
      output: { maxBytes: 8, headBytes: 5, tailBytes: 3 },
    })
    const result = await shell().run(spec)
    expect(result.output.head).toBe('éé')
    expect(result.output.tail).toBe('é')
    expect(result.output.omittedBytes).toBe(20 - 4 - 2)
  })

  it('reports a missing bash as a failed start', async () => {
    const local = new Context()
    await local.plugin(LocalSubprocessService, {} as never)
    await local.plugin(BashLocalExecutor, { bash: '/nonexistent/bash' } as never)
    const result = await local.shell.run(await local.shell.resolve({ command: 'true', cwd: dir }))
    expect(result.status).toBe('failed')
    expect(result.error?.code).toBe('ENOENT')
  })

  it('fails loudly at load when the maximum timeout is below the default', async () => {
    const local = new Context()
    await local.plugin(LocalSubprocessService, {} as never)
    const outcome = await Promise.race([
      Promise.resolve(local.plugin(BashLocalExecutor, { defaultTimeoutMs: 10_000, maxTimeoutMs: 1_000 } as never)).then(
        () => 'loaded',
        (error: unknown) => String(error),
      ),
      new Promise((resolve) => setTimeout(() => resolve('pending'), 200)),
    ])
    expect(outcome).toMatch(/maxTimeoutMs \(1000\) must be at least defaultTimeoutMs/)
    expect(local.get('shell')).toBeUndefined()
  })
})

describe('bash-local service references', () => {
  it('reads ctx.subprocess once, not per command, and follows a replaced subprocess service', async () => {
    const local = new Context()
    const subprocess = local.plugin(LocalSubprocessService, {} as never)
    await subprocess
    const executor = local.plugin(BashLocalExecutor, { spillDir: join(dir, 'spill-refs') } as never)
    await executor
    let reads = 0
    local.on('internal/get', (_ctx, name, _error, next) => {
      if (name === 'subprocess') reads++
      return next()
    })
    const once = async (command: string) =>
      (await local.shell.run(await local.shell.resolve({ command, cwd: dir }))).output.head
    expect(await once('echo one')).toBe('one\n')
    expect(await once('echo two')).toBe('two\n')
    expect(reads).toBe(0)
    // The old service is disposed with its plugin; the executor restarts over the new one.
    await subprocess.dispose()
    await local.plugin(LocalSubprocessService, {} as never)
    await executor
    expect(await once('echo three')).toBe('three\n')
  })
})
