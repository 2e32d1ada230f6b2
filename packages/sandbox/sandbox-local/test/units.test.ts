// The package's helpers called directly: the request checks, the protective binds and pins for the
// cases the wrap() tests do not reach (several writable roots, hidden paths elsewhere), the spawn
// server's bwrap prefix, the stored probe's shape check and file, what each probe concludes from
// its children's answers, how a probe child's end is reported, and the unload's wait for probe
// children. Written against the survivors of `pnpm mutation sandbox-local`; every case is also a
// contract the service relies on.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { EventEmitter } from 'node:events'
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  realpathSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { SpawnedChild } from '@dsh/posix-spawn'
import { isSandboxError } from '@dsh/sandbox'
import { pinDirs, protectArgs, serverPrefix } from '../src/bwrap.ts'
import { LANDLOCK_HELPER } from '../src/constants.ts'
import { checkRequest, refuseDanglingControlLinks, refuseWritableInsideProtected } from '../src/policy.ts'
import {
  endProbes,
  isProbe,
  probeBwrap,
  probeLandlock,
  readProbeCache,
  runProbeChild,
  writeProbeCache,
  type ProbeResult,
} from '../src/probe.ts'

let base: string
beforeAll(() => {
  base = realpathSync(mkdtempSync(join(tmpdir(), 'dsh-sandbox-units-')))
})
afterAll(() => rmSync(base, { recursive: true, force: true }))

/** The code and message of what `fn` throws, or undefined. */
function thrown(fn: () => void): string | undefined {
  try {
    fn()
    return undefined
  } catch (error) {
    return isSandboxError(error) ? `${error.code}: ${error.message}` : `not a SandboxError: ${String(error)}`
  }
}

describe('checkRequest', () => {
  const ok = { mode: 'read-only', workspaceRoot: '/w', writableRoots: [], network: false } as const
  const check = (request: unknown) => thrown(() => checkRequest(request as never))

  it('an empty argv, a policy that is not an object, writable roots that are not absolute strings', () => {
    expect(check({ argv: ['true'], cwd: '/', policy: ok })).toBeUndefined()
    expect(check({ argv: [], cwd: '/', policy: ok })).toBe('INVALID_POLICY: argv must be a non-empty array of strings')
    expect(check({ argv: ['true'], cwd: '/', policy: 'read-only' })).toBe('INVALID_POLICY: policy must be an object')
    for (const roots of [[5], ['relative/dir'], ['/abs', 'rel']])
      expect(check({ argv: ['true'], cwd: '/', policy: { ...ok, writableRoots: roots } }), JSON.stringify(roots)).toBe(
        'INVALID_POLICY: policy.writableRoots must be absolute paths',
      )
  })
})

describe('refusals before a runner is asked', () => {
  it('a read-only path that holds no writable root is no reason to refuse', () => {
    expect(thrown(() => refuseWritableInsideProtected(['/w/project'], ['/home/u/.dsh', '/etc']))).toBeUndefined()
    expect(thrown(() => refuseWritableInsideProtected(['/home/u/.dsh/ws'], ['/etc', '/home/u/.dsh']))).toMatch(
      /^SANDBOX_UNAVAILABLE: the writable root \/home\/u\/\.dsh\/ws lies inside \/home\/u\/\.dsh,/,
    )
  })

  it('a dangling control link in any one of several writable roots is refused', () => {
    const first = join(base, 'root-a')
    const second = join(base, 'root-b')
    mkdirSync(first)
    mkdirSync(second)
    symlinkSync('gitdir-missing', join(second, '.git'))
    expect(thrown(() => refuseDanglingControlLinks([join(second, '.git', 'hooks')], [first, second]))).toMatch(
      new RegExp(
        `^SANDBOX_UNAVAILABLE: ${join(second, '.git')} is a symbolic link to ${join(second, 'gitdir-missing')},`,
      ),
    )
  })
})

describe('bwrap arguments', () => {
  it('a spawn server runs behind the same flags without --as-pid-1, ending in --', () => {
    const flags = ['bwrap', '--ro-bind', '/', '/', '--unshare-pid', '--as-pid-1', '--die-with-parent']
    expect(serverPrefix(flags)).toEqual(['bwrap', '--ro-bind', '/', '/', '--unshare-pid', '--die-with-parent', '--'])
    expect(flags).toContain('--as-pid-1')
  })

  it('a missing read-only path is created under whichever writable root holds it', () => {
    const one = join(base, 'wr-1')
    const two = join(base, 'wr-2')
    mkdirSync(one)
    mkdirSync(two)
    const missing = join(two, '.dsh')
    expect(protectArgs([missing], [], [one, two])).toEqual(['--ro-bind', missing, missing])
    expect(existsSync(missing)).toBe(true)
  })

  it('a read-only directory becomes a tmpfs only for hidden entries directly inside it; others are bound apart', () => {
    const dsh = join(base, 'dsh-ro')
    mkdirSync(dsh)
    writeFileSync(join(dsh, '.credentials.yaml'), 'k: v')
    writeFileSync(join(dsh, 'config.yml'), 'x')
    const elsewhere = join(base, 'elsewhere.env')
    writeFileSync(elsewhere, 'TOKEN=x')
    expect(protectArgs([dsh], [join(dsh, '.credentials.yaml'), elsewhere], [])).toEqual([
      '--tmpfs',
      dsh,
      '--ro-bind-try',
      join(dsh, 'config.yml'),
      join(dsh, 'config.yml'),
      '--remount-ro',
      dsh,
      '--ro-bind',
      '/dev/null',
      elsewhere,
    ])
  })

  it('pins start below the outermost writable root holding the path, whatever the order of the roots', () => {
    expect(pinDirs(['/w/a/b/f'], ['/w/a', '/w'])).toEqual(['/w/a', '/w/a/b'])
    // A root that does not hold the path is not a candidate, even when it is shorter.
    expect(pinDirs(['/work/long/a/f'], ['/work/long', '/x'])).toEqual(['/work/long/a'])
  })

  it('breaks ties by code-unit order, whatever the locale (no ICU collation)', () => {
    // A collator puts `a` before `B`; code units put `B` (66) before `a` (97), and `_` (95)
    // before `a` too: the bind order must not depend on the machine's locale data.
    expect(pinDirs(['/w/a/f', '/w/B/f', '/w/_/f'], ['/w'])).toEqual(['/w/B', '/w/_', '/w/a'])
  })
})

describe('the stored probe result', () => {
  it('only the shape the service writes is a probe; anything else is not, without throwing', () => {
    const landlock = { runner: 'landlock', abi: 2, seccomp: true, namespaces: false }
    const good = [
      { rejected: [], notes: [] },
      { selected: { runner: 'bwrap' }, rejected: [{ runner: 'landlock', reason: 'r' }], notes: ['n'] },
      { selected: landlock, rejected: [], notes: [] },
    ]
    for (const value of good) expect(isProbe(value), JSON.stringify(value)).toBe(true)
    const bad: unknown[] = [
      null,
      undefined,
      'probe',
      7,
      { rejected: {}, notes: [] },
      { rejected: [], notes: {} },
      { rejected: [], notes: [1] },
      { rejected: [null], notes: [] },
      { rejected: [{ runner: 'bwrap', reason: 'r' }, { runner: 'landlock' }], notes: [] },
      { rejected: [{ runner: 'bwrap', reason: 1 }], notes: [] },
      { selected: null, rejected: [], notes: [] },
      { selected: 'bwrap', rejected: [], notes: [] },
      { selected: { ...landlock, runner: 'chroot' }, rejected: [], notes: [] },
      { selected: { ...landlock, abi: '2' }, rejected: [], notes: [] },
    ]
    for (const value of bad) expect(isProbe(value), JSON.stringify(value)).toBe(false)
  })

  it('is written as one JSON line; a stamp that is not a finite number reads as never verified', () => {
    const file = join(base, 'cache', 'sandbox-probe.json')
    const probe = { selected: { runner: 'bwrap' as const }, rejected: [], notes: [] }
    writeProbeCache(file, () => 'key-1', probe)
    const text = readFileSync(file, 'utf8')
    expect(text.endsWith('}\n')).toBe(true)
    expect(readProbeCache(file, () => 'key-1')).toEqual({ probe, verifiedAt: JSON.parse(text).verifiedAt })
    expect(readProbeCache(file, () => 'key-2')).toBeUndefined()
    for (const stamp of ['1e400', '"1796000000000"', 'null']) {
      writeFileSync(file, `{"key":"key-1","probe":${JSON.stringify(probe)},"verifiedAt":${stamp}}`)
      expect(
        readProbeCache(file, () => 'key-1'),
        stamp,
      ).toEqual({ probe, verifiedAt: 0 })
    }
  })
})

describe('what a probe concludes from its children', () => {
  /** A probe run that answers from a table by the runner's file name. */
  const answers =
    (table: Record<string, ProbeResult>) =>
    async (file: string): Promise<ProbeResult> =>
      table[file] ?? { code: 127, output: '' }

  it('bwrap: the first line of what it printed, trimmed', async () => {
    const reason = await probeBwrap(answers({ bwrap: { code: 1, output: '\n  bwrap: no uid map\nmore\n' } }), 'bwrap')
    expect(reason).toBe('bwrap exited 1: bwrap: no uid map')
    expect(await probeBwrap(answers({ bwrap: { code: null, output: 'spawn bwrap ENOENT' } }), 'bwrap')).toBe(
      'bwrap could not run: spawn bwrap ENOENT',
    )
  })

  it('Landlock: the helper’s first line, the first 100 characters of an answer it cannot read, seccomp as given', async () => {
    const failed = await probeLandlock(
      answers({ node: { code: 1, output: '\nhelper: no\nsecond' } }),
      'node',
      'unshare',
    )
    expect(failed).toBe('the Landlock helper failed: helper: no')
    // A helper that fails without a word: the reason says so and adds nothing after it.
    expect(await probeLandlock(answers({ node: { code: 1, output: '' } }), 'node', 'unshare')).toBe(
      'the Landlock helper failed',
    )
    const long = `x${'y'.repeat(200)}`
    expect(await probeLandlock(answers({ node: { code: 0, output: long } }), 'node', 'unshare')).toBe(
      `unexpected probe output ${JSON.stringify(long.slice(0, 100))}`,
    )
    const found = await probeLandlock(
      answers({ node: { code: 0, output: '{"abi":4,"seccomp":true}' }, unshare: { code: 0, output: '' } }),
      'node',
      'unshare',
    )
    expect(found).toEqual({ abi: 4, seccomp: true, namespaces: true })
    const calls: string[] = []
    await probeLandlock(
      async (file, args) => {
        calls.push([file, ...args].join(' '))
        return { code: 0, output: '{"abi":1,"seccomp":false}' }
      },
      'node',
      'unshare',
    )
    expect(calls[0]).toBe(`node ${LANDLOCK_HELPER} --probe`)
  })
})

describe('a probe child', () => {
  let scripts = 0
  const script = (body: string) => {
    const file = join(base, `child-${++scripts}`)
    writeFileSync(file, `#!/bin/sh\n${body}\n`, { mode: 0o755 })
    return file
  }

  it('reports what it printed on stdout alone, a missing binary as not run, and leaves the tracked set', async () => {
    const probing = new Set<SpawnedChild>()
    expect(await runProbeChild(script('echo "on stdout"; exit 2'), [], 5000, probing)).toEqual({
      code: 2,
      output: 'on stdout\n',
    })
    expect(probing.size).toBe(0)
    const missing = join(base, 'no-such-runner')
    const gone = await runProbeChild(missing, [], 5000, probing)
    expect(gone.code).toBeNull()
    expect(gone.output).toContain('ENOENT')
  })

  it('ended at its timeout without a word: not run, with a reason that is not empty', async () => {
    const probing = new Set<SpawnedChild>()
    const hung = await runProbeChild(script('exec sleep 30'), [], 100, probing)
    expect(hung.code).toBeNull()
    expect(hung.output).not.toBe('')
    expect(probing.size).toBe(0)
  })
})

describe('the unload’s wait for probe children', () => {
  /** A stand-in child: `kill` records the signal and, when `closes`, ends it. */
  function child(exitCode: number | null, signalCode: string | null) {
    const emitter = new EventEmitter() as EventEmitter & { exitCode: number | null; signalCode: string | null }
    emitter.exitCode = exitCode
    emitter.signalCode = signalCode
    const killed = new Promise<string>((resolve) => {
      Object.assign(emitter, {
        kill: (signal: string) => {
          resolve(signal)
          emitter.emit('close', null, signal)
          return true
        },
      })
    })
    return { child: emitter as unknown as SpawnedChild, killed }
  }

  it('one that already ended is not waited for; a live one is killed after the grace', async () => {
    for (const [exitCode, signalCode] of [
      [0, null],
      [null, 'SIGTERM'],
    ] as const) {
      const ended = child(exitCode, signalCode)
      const outcome = await Promise.race([
        endProbes(new Set([ended.child]), 50).then(() => 'returned'),
        ended.killed.then(() => 'killed'),
      ])
      expect(outcome, `${exitCode} ${signalCode}`).toBe('returned')
    }
    const live = child(null, null)
    await endProbes(new Set([live.child]), 50)
    expect(await live.killed).toBe('SIGKILL')
  })
})
