// What a Landlock command of a policy runs, from landlockPlan directly: its refusals (no network
// filter, a protected path inside a writable root), the helper's spec with the read-only mounts a
// mount namespace allows, the notes, and the spawn server's start (prefix, sweep and what its
// confinement captured). sandbox-local.test.ts runs commands under the real helper; this file is
// the quick half, written against the survivors of `pnpm mutation sandbox-local`.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { mkdirSync, mkdtempSync, readlinkSync, realpathSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { SandboxPolicy } from '@dsh/sandbox'
import { LANDLOCK_CONTROL_NOTE, LANDLOCK_HELPER, PID1_INIT } from '../src/constants.ts'
import { hiddenAncestors, landlockPlan } from '../src/landlock.ts'
import type { Selected } from '../src/probe.ts'
import { captured } from '../src/servers.ts'

let base: string
let ws: string
beforeAll(() => {
  base = realpathSync(mkdtempSync(join(tmpdir(), 'dsh-landlock-plan-')))
  ws = join(base, 'ws')
  mkdirSync(join(ws, '.git', 'hooks'), { recursive: true })
  writeFileSync(join(ws, '.mcp.json'), '{}')
})
afterAll(() => rmSync(base, { recursive: true, force: true }))

const NAMESPACED: Selected = { runner: 'landlock', abi: 3, seccomp: true, namespaces: true }
const PLAIN: Selected = { runner: 'landlock', abi: 3, seccomp: true, namespaces: false }

function plan(
  selected: Selected,
  extra: Partial<SandboxPolicy> = {},
  paths: { writable?: string[]; readOnly?: string[]; hidden?: string[] } = {},
) {
  const policy: SandboxPolicy = {
    mode: 'workspace-write',
    workspaceRoot: ws,
    writableRoots: [ws],
    network: false,
    ...extra,
  }
  return landlockPlan({
    node: '/usr/bin/node',
    unshare: '/usr/bin/unshare',
    selected,
    policy,
    writable: paths.writable ?? [ws],
    readOnly: paths.readOnly ?? [],
    hidden: paths.hidden ?? [],
    argv: ['true'],
    init: PID1_INIT,
    merge: false,
  })
}
const decode = (spec: string) => JSON.parse(Buffer.from(spec, 'base64').toString('utf8'))
const refusal = (fn: () => unknown) => {
  try {
    fn()
    return undefined
  } catch (error) {
    return `${(error as { code: string }).code}: ${(error as Error).message}`
  }
}

describe('refusals', () => {
  it('offline without a seccomp filter: refused; with the network on, no filter is needed', () => {
    const noFilter = { ...PLAIN, seccomp: false }
    expect(refusal(() => plan(noFilter))).toBe(
      `SANDBOX_UNAVAILABLE: the Landlock runner cannot turn the network off on ${process.arch} (no seccomp filter for it), so the command was not run`,
    )
    expect(refusal(() => plan(noFilter, { network: true }))).toBeUndefined()
  })

  it('a read-only or hidden path inside a writable root cannot be protected; one outside can', () => {
    const inside = join(ws, '.dsh')
    for (const paths of [{ readOnly: [inside] }, { hidden: [inside] }])
      expect(
        refusal(() => plan(PLAIN, {}, paths)),
        JSON.stringify(paths),
      ).toBe(
        `SANDBOX_UNAVAILABLE: the Landlock runner cannot protect ${inside} inside the writable root ${ws} (a confined command could rewrite dsh's configuration or read its credentials), so the command was not run; move DSH_HOME outside ${ws} or install bubblewrap`,
      )
    expect(refusal(() => plan(PLAIN, {}, { readOnly: [join(base, 'home')], hidden: [join(base, 'k')] }))).toBe(
      undefined,
    )
  })
})

describe('the plan', () => {
  const control = () => [join(ws, '.git', 'hooks'), join(ws, '.mcp.json'), join(ws, '.codex')]

  it('in a mount namespace: existing control files bound read-only, their parents pinned, the namespace named', () => {
    const result = plan(NAMESPACED, { controlPaths: control() })
    const spec = decode(result.argv[result.argv.indexOf(LANDLOCK_HELPER) + 1]!)
    const mounts = {
      namespace: readlinkSync('/proc/self/ns/mnt'),
      pins: [join(ws, '.git')],
      readOnly: [join(ws, '.git', 'hooks'), join(ws, '.mcp.json')],
    }
    expect(spec).toEqual({ writable: [ws], network: false, hidden: [], mounts })
    expect(result.notes).toEqual([
      'network: IPv4/IPv6 sockets are refused; Unix-domain sockets on the filesystem stay reachable',
    ])
    // The server: behind unshare, the same confinement plus the control descriptor, sweeping.
    const serverSpec = result.server.prefix.at(-2)!
    expect(result.server.prefix).toEqual([
      '/usr/bin/unshare',
      '--pid',
      '--fork',
      '--kill-child',
      '--mount-proc',
      '--net',
      '--',
      '/usr/bin/node',
      LANDLOCK_HELPER,
      serverSpec,
      '--',
    ])
    expect(decode(serverSpec)).toEqual({ ...spec, controlFd: 3 })
    expect(result.server.sweep).toBe(true)
    // What its binds hold: the writable root, the pins and the read-only targets.
    expect(result.server.captured).toBe(captured([ws, ...mounts.pins, ...mounts.readOnly], []))
  })

  it('without one: no mounts, the control-file note only for control paths inside a writable root, no sweep', () => {
    const other = join(base, 'other')
    mkdirSync(other, { recursive: true })
    const result = plan(
      PLAIN,
      { controlPaths: [join(base, 'elsewhere', '.git'), ...control()], network: true },
      { writable: [other, ws] },
    )
    const spec = decode(result.argv[2]!)
    expect(spec).toEqual({ writable: [other, ws], network: true, hidden: [] })
    expect(result.argv).toEqual(['/usr/bin/node', LANDLOCK_HELPER, result.argv[2], '--', 'true'])
    expect(result.notes).toEqual([LANDLOCK_CONTROL_NOTE])
    expect(result.server.sweep).toBe(false)
    expect(result.server.prefix).toEqual(['/usr/bin/node', LANDLOCK_HELPER, result.server.prefix[2], '--'])
    // Control paths outside every writable root: nothing is left writable, nothing to say.
    expect(plan(PLAIN, { controlPaths: [join(base, 'elsewhere', '.git')], network: true }).notes).toEqual([])
    // With the network on, unshare adds no network namespace.
    expect(plan(NAMESPACED, { network: true }).argv.slice(0, 6)).toEqual([
      '/usr/bin/unshare',
      '--pid',
      '--fork',
      '--kill-child',
      '--mount-proc',
      '--',
    ])
  })

  it('a server for hidden paths also captures the listing of every directory above them', () => {
    const secret = join(base, 'keys', 'id.env')
    const result = plan(PLAIN, {}, { hidden: [secret] })
    expect(result.server.captured).toBe(captured([ws], hiddenAncestors([secret])))
    expect(hiddenAncestors([secret, join(base, 'keys', 'other')])).toEqual(
      [
        ...new Set([
          '/',
          ...base
            .split('/')
            .slice(1)
            .map((_, i, all) => `/${all.slice(0, i + 1).join('/')}`),
        ]),
      ]
        .concat(join(base, 'keys'))
        .sort(),
    )
    expect(hiddenAncestors(['/z/b', '/a/c'])).toEqual(['/', '/a', '/z'])
  })
})
