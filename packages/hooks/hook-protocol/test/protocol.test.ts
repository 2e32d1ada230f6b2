import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { Context } from 'cordis'
import SubprocessLocal from '@dsh/subprocess-local'
import { decodeOutcome, matches, mostRestrictive, runHookCommand, type HookProcessResult } from '../src/index.ts'

const fibers: { dispose(): unknown }[] = []
afterEach(async () => {
  for (const fiber of fibers.splice(0)) await fiber.dispose()
})

async function subprocess() {
  const ctx = new Context()
  const fiber = ctx.plugin(SubprocessLocal, {} as never)
  await fiber
  fibers.push(fiber)
  return ctx.subprocess
}

const result = (over: Partial<HookProcessResult>): HookProcessResult => ({
  exitCode: 0,
  signal: null,
  stdout: '',
  stderr: '',
  durationMs: 1,
  timedOut: false,
  ...over,
})

describe('@dsh/hook-protocol', () => {
  it('runs a command with the JSON input on stdin and collects its answer', async () => {
    const cwd = mkdtempSync(join(tmpdir(), 'dsh-hook-'))
    const run = await runHookCommand(await subprocess(), {
      command: 'read line; echo "got $line in $(pwd) with $HOOK_VAR"; echo warn >&2; exit 3',
      cwd,
      env: { HOOK_VAR: 'v' },
      input: { a: 1 },
      timeoutMs: 10_000,
    })
    expect(run).toMatchObject({
      exitCode: 3,
      stdout: `got {"a":1} in ${cwd} with v\n`,
      stderr: 'warn\n',
      timedOut: false,
    })
    expect(decodeOutcome(run, 10_000)).toEqual({ kind: 'error', message: 'the hook exited with code 3: warn' })
  })

  it('stops a hook at its timeout', async () => {
    const run = await runHookCommand(await subprocess(), {
      command: 'sleep 30',
      cwd: tmpdir(),
      input: {},
      timeoutMs: 200,
    })
    expect(run.timedOut).toBe(true)
    expect(decodeOutcome(run, 200)).toEqual({
      kind: 'timeout',
      message: 'the hook did not finish within 0.2 s and was stopped',
    })
  })

  it('decodes exit codes and JSON stdout', () => {
    expect(decodeOutcome(result({ stdout: '{"decision":"block"}\n' }), 1000)).toEqual({
      kind: 'ok',
      stdout: '{"decision":"block"}\n',
      json: { decision: 'block' },
    })
    expect(decodeOutcome(result({ stdout: 'plain context' }), 1000)).toEqual({ kind: 'ok', stdout: 'plain context' })
    expect(decodeOutcome(result({ stdout: '{not json' }), 1000)).toEqual({ kind: 'ok', stdout: '{not json' })
    expect(decodeOutcome(result({ exitCode: 2, stderr: 'no\n' }), 1000)).toEqual({ kind: 'block', message: 'no' })
    expect(decodeOutcome(result({ exitCode: 2 }), 1000)).toEqual({
      kind: 'block',
      message: 'blocked by a hook (exit code 2, no message)',
    })
    expect(decodeOutcome(result({ exitCode: null, signal: 'SIGKILL' }), 1000)).toEqual({
      kind: 'error',
      message: 'the hook was killed by SIGKILL',
    })
  })

  it('matches tool names like Claude Code matchers', () => {
    expect(matches(undefined, 'Bash')).toBe(true)
    expect(matches('', 'Bash')).toBe(true)
    expect(matches('*', 'Bash')).toBe(true)
    expect(matches('Bash', 'Bash')).toBe(true)
    expect(matches('Bash', 'BashOutput')).toBe(false)
    expect(matches('Edit|Write', 'Write')).toBe(true)
    expect(matches('mcp__github__.*', 'mcp__github__search')).toBe(true)
    expect(matches('(', '(')).toBe(true)
    expect(mostRestrictive(['allow', 'deny', 'ask'])).toBe('deny')
    expect(mostRestrictive(['allow', 'ask'])).toBe('ask')
    expect(mostRestrictive([undefined])).toBeUndefined()
  })
})
