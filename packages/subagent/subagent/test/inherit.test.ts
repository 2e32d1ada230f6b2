// What a child in another process inherits, function by function: the depth variables, the mode
// floor and its order, which boot layers are the user's own, the policy layer a dsh child boots
// with, and the environment handed to the process seam. The providers (acp, claude-code, codex,
// sdk) use these through the package name; mutation testing (`pnpm mutation subagent`) showed no
// test of this package reaching them.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
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
import { Context } from 'cordis'
import type { SandboxPolicy } from '@dsh/sandbox'
import {
  childEnv,
  inheritedDepth,
  inheritedModeFloor,
  looserThan,
  userLayers,
  writePolicyLayer,
  type ChildInheritance,
} from '../src/index.ts'

let base: string
let savedHome: string | undefined

beforeAll(() => {
  base = realpathSync(mkdtempSync(join(tmpdir(), 'dsh-subagent-inherit-')))
  savedHome = process.env.DSH_HOME
  process.env.DSH_HOME = join(base, 'dsh-home')
})
afterAll(() => {
  if (savedHome === undefined) delete process.env.DSH_HOME
  else process.env.DSH_HOME = savedHome
  rmSync(base, { recursive: true, force: true })
})

function file(path: string, text = '[]\n'): string {
  mkdirSync(join(path, '..'), { recursive: true })
  writeFileSync(path, text)
  return path
}

/** The row config of a generated layer (its `config:` line is JSON, YAML's flow syntax). */
function layerConfig(text: string): unknown {
  const lines = text.split('\n')
  expect(lines[1]).toBe('- id: sandbox-policy')
  expect(lines[2].startsWith('  config: ')).toBe(true)
  expect(lines.slice(3)).toEqual([''])
  return JSON.parse(lines[2].slice('  config: '.length))
}

const inheritance = (overrides: Partial<ChildInheritance> = {}): ChildInheritance => ({
  mode: 'workspace-write',
  patchFiles: [],
  depth: 1,
  maxDepth: 2,
  env: { DSH_PERMISSION_MODE: 'workspace-write', DSH_SUBAGENT_DEPTH: '1', DSH_SUBAGENT_MAX_DEPTH: '2' },
  ...overrides,
})

describe('the depth variables and the mode floor', () => {
  it('reads the depth and the limit a parent set, trimmed; blank is unset', () => {
    expect(inheritedDepth({ DSH_SUBAGENT_DEPTH: ' 3 ', DSH_SUBAGENT_MAX_DEPTH: '4' })).toEqual({
      depth: 3,
      maxDepth: 4,
    })
    expect(inheritedDepth({ DSH_SUBAGENT_DEPTH: '2' })).toEqual({ depth: 2 })
    expect(inheritedDepth({ DSH_SUBAGENT_DEPTH: '   ', DSH_SUBAGENT_MAX_DEPTH: '' })).toEqual({ depth: 0 })
    expect(inheritedDepth({ DSH_SUBAGENT_MAX_DEPTH: '999' })).toEqual({ depth: 0, maxDepth: 999 })
    expect(() => inheritedDepth({ DSH_SUBAGENT_DEPTH: '1000' })).toThrow(
      'DSH_SUBAGENT_DEPTH must be a whole number from 0 to 999 (got "1000")',
    )
    expect(() => inheritedDepth({ DSH_SUBAGENT_DEPTH: '2 levels' })).toThrow('(got "2 levels")')
    expect(() => inheritedDepth({ DSH_SUBAGENT_DEPTH: 'x1' })).toThrow('(got "x1")')
  })

  it('orders the modes read-only < workspace-write < danger-full-access', () => {
    expect(looserThan('workspace-write', 'read-only')).toBe(true)
    expect(looserThan('danger-full-access', 'workspace-write')).toBe(true)
    expect(looserThan('read-only', 'workspace-write')).toBe(false)
    expect(looserThan('workspace-write', 'workspace-write')).toBe(false)
    expect(looserThan('read-only', 'danger-full-access')).toBe(false)
  })

  it("the floor is the parent's mode only at depth 1 or more, trimmed; no mode is no floor", () => {
    expect(inheritedModeFloor({ DSH_SUBAGENT_DEPTH: '0', DSH_PERMISSION_MODE: 'read-only' })).toBeUndefined()
    expect(inheritedModeFloor({ DSH_SUBAGENT_DEPTH: '2', DSH_PERMISSION_MODE: ' workspace-write ' })).toBe(
      'workspace-write',
    )
    expect(inheritedModeFloor({ DSH_SUBAGENT_DEPTH: '1' })).toBeUndefined()
    expect(inheritedModeFloor({ DSH_SUBAGENT_DEPTH: '1', DSH_PERMISSION_MODE: '  ' })).toBeUndefined()
  })
})

describe("userLayers: the user's own boot layers", () => {
  it('keeps --patch files once each, picks out the home patch, and drops shipped and profile layers', () => {
    const home = join(base, 'home-a')
    const homePatch = file(join(home, 'cordis.patch.yml'))
    const profileDir = join(base, 'profile-a')
    const profileLayer = file(join(profileDir, 'profile.yml'))
    // A layer inside a dsh package (a bundle's) is shipped; one inside any other package is the user's.
    file(join(base, 'bundle', 'package.json'), JSON.stringify({ name: '@dsh/bundle-x' }))
    const shipped = file(join(base, 'bundle', 'layers', 'base.yml'))
    file(join(base, 'mine', 'package.json'), JSON.stringify({ name: 'my-project' }))
    const ownInPackage = file(join(base, 'mine', 'dsh.patch.yml'))
    // A package.json that is not JSON names no dsh package: the layer is the user's.
    file(join(base, 'broken', 'package.json'), '{ not json')
    const inBroken = file(join(base, 'broken', 'x.yml'))
    const loose = file(join(base, 'loose', 'extra.patch.yml'))
    const viaLink = join(base, 'loose-link.yml')
    symlinkSync(loose, viaLink)

    const layers = userLayers(
      [shipped, profileLayer, homePatch, ownInPackage, loose, viaLink, inBroken],
      home,
      profileDir,
    )
    expect(layers).toStrictEqual({ patchFiles: [ownInPackage, loose, inBroken], homePatch })
  })

  it('without a home or a profile nothing is taken for them', () => {
    const home = join(base, 'home-b')
    const homePatch = file(join(home, 'cordis.patch.yml'))
    const profileDir = join(base, 'profile-b')
    const profileLayer = file(join(profileDir, 'p.yml'))
    expect(userLayers([homePatch, profileLayer], undefined, undefined)).toStrictEqual({
      patchFiles: [homePatch, profileLayer],
    })
    // A home whose patch the parent did not boot from: no homePatch key at all.
    expect(userLayers([profileLayer], home, profileDir)).toStrictEqual({ patchFiles: [] })
    // A directory that only shares the profile's name as a prefix is not the profile.
    const sibling = file(join(`${profileDir}-other`, 'q.yml'))
    expect(userLayers([sibling], undefined, profileDir)).toStrictEqual({ patchFiles: [sibling] })
  })
})

describe("writePolicyLayer: the parent's policy for a dsh child", () => {
  const policy: SandboxPolicy = {
    mode: 'read-only',
    workspaceRoot: '/work/ws',
    writableRoots: ['/work/ws', '/scratch'],
    network: false,
    readOnlyPaths: ['/home/u/.dsh'],
    hiddenPaths: ['/home/u/.dsh/.credentials.yaml'],
  }

  it('writes the resolved policy as a sandbox-policy row in the private run directory, and removes it', () => {
    const layer = writePolicyLayer(inheritance({ mode: 'read-only', policy }))!
    expect(layer.file.startsWith(`${join(process.env.DSH_HOME!, 'run')}/`)).toBe(true)
    const text = readFileSync(layer.file, 'utf8')
    expect(text.startsWith('# Generated by @dsh/subagent')).toBe(true)
    expect(layerConfig(text)).toEqual({
      defaultMode: 'read-only',
      network: false,
      writableRoots: ['/scratch'],
      tempDirs: [],
      readOnlyPaths: ['/home/u/.dsh'],
      hiddenPaths: ['/home/u/.dsh/.credentials.yaml'],
    })
    layer.remove()
    expect(existsSync(layer.file)).toBe(false)
  })

  it('lists no read-only or hidden paths the parent did not have, and writes nothing unconfined or without a policy', () => {
    const bare: SandboxPolicy = { mode: 'workspace-write', workspaceRoot: '/w', writableRoots: ['/w'], network: true }
    const layer = writePolicyLayer(inheritance({ policy: bare }))!
    expect(layerConfig(readFileSync(layer.file, 'utf8'))).toEqual({
      defaultMode: 'workspace-write',
      network: true,
      writableRoots: [],
      tempDirs: [],
      readOnlyPaths: [],
      hiddenPaths: [],
    })
    layer.remove()
    expect(
      writePolicyLayer(inheritance({ mode: 'danger-full-access', policy: { ...bare, mode: 'danger-full-access' } })),
    ).toBeUndefined()
    expect(writePolicyLayer(inheritance())).toBeUndefined()
  })
})

describe('childEnv: the environment of a child process', () => {
  it("starts scrubbed, adds the named credentials that are set, then the row's env, then the inheritance last", async () => {
    const ctx = new Context()
    process.env.DSH_TEST_CRED_SET = 'secret-1'
    process.env.DSH_TEST_CRED_EMPTY = ''
    delete process.env.DSH_TEST_CRED_UNSET
    try {
      const env = await childEnv(
        ctx,
        ['DSH_TEST_CRED_SET', 'DSH_TEST_CRED_EMPTY', 'DSH_TEST_CRED_UNSET'],
        { ROW_VAR: 'row', DSH_TEST_CRED_SET: 'from-row', DSH_SUBAGENT_DEPTH: '99' },
        inheritance(),
      )
      expect(env).toEqual({
        base: 'scrubbed',
        set: {
          DSH_TEST_CRED_SET: 'from-row',
          ROW_VAR: 'row',
          DSH_PERMISSION_MODE: 'workspace-write',
          DSH_SUBAGENT_DEPTH: '1',
          DSH_SUBAGENT_MAX_DEPTH: '2',
        },
      })
      expect(await childEnv(ctx, ['DSH_TEST_CRED_SET'], {})).toEqual({
        base: 'scrubbed',
        set: { DSH_TEST_CRED_SET: 'secret-1' },
      })
    } finally {
      delete process.env.DSH_TEST_CRED_SET
      delete process.env.DSH_TEST_CRED_EMPTY
    }
  })
})
