// The announcement when the sandbox provider is the confinement (a remote world such as e2b): its
// own statement replaces the local policy's, in every mode, followed by the runner's notes; a
// statement that comes from describe() instead is used in confining modes; and in
// danger-full-access a local runner is not asked at all (no probe). Mutation testing (`pnpm
// mutation sandbox-policy`) showed this branch of the announcement unpinned.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { mkdirSync, mkdtempSync, realpathSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createHarness } from '@dsh/agent-loop-testkit'
import { SandboxService, type SandboxInvocation, type SandboxRunnerInfo } from '@dsh/sandbox'
import SandboxPolicyService from '../src/index.ts'

let base: string
let temp: string
beforeAll(() => {
  base = realpathSync(mkdtempSync(join(tmpdir(), 'dsh-policy-confinement-')))
  temp = join(base, 'tmp')
  mkdirSync(temp)
})
afterAll(() => rmSync(base, { recursive: true, force: true }))

/** A provider that may state its confinement, and whose describe() answers `info` (counted). */
function provider(stated: string | undefined, info: SandboxRunnerInfo, asked: { count: number }) {
  return class extends SandboxService {
    readonly confinement = stated
    async describe(): Promise<SandboxRunnerInfo> {
      asked.count++
      return info
    }
    async wrap(): Promise<SandboxInvocation> {
      throw new Error('not used')
    }
  }
}

/** The announcement in the first model request of a session under `mode`. */
async function announced(
  stated: string | undefined,
  info: SandboxRunnerInfo,
  mode: string,
): Promise<{ text: string[]; asked: number; policy: string }> {
  const ws = join(base, `ws-${mode}`)
  mkdirSync(ws, { recursive: true })
  const asked = { count: 0 }
  const harness = await createHarness({
    cwd: ws,
    script: [{ text: 'ok' }],
    plugins: [
      [provider(stated, info, asked), {}],
      [SandboxPolicyService, { tempDirs: [temp], defaultMode: mode }],
    ],
  })
  try {
    await harness.prompt('go')
    const text = harness.model.requests[0]!.messages.map((message) => JSON.stringify(message))
      .filter((line) => line.includes('[sandbox policy]'))
      .map((line) => JSON.parse(`"${/(\[sandbox policy\][^"]*)"/.exec(line)![1]}"`) as string)
    const policy = harness.ctx.sandboxPolicy.describe({ sessionId: harness.session.id, cwd: ws })
    return { text, asked: asked.count, policy }
  } finally {
    await harness.dispose()
  }
}

describe('a provider that states its confinement', () => {
  const info = { runner: 'e2b', rejected: [], notes: ['A remote note.'] } as unknown as SandboxRunnerInfo

  it('replaces the policy statement in every mode, with the runner’s notes after it', async () => {
    for (const mode of ['workspace-write', 'danger-full-access']) {
      const { text, asked } = await announced('Commands run in a remote sandbox.', info, mode)
      expect(text, mode).toEqual(['[sandbox policy] Commands run in a remote sandbox. A remote note.'])
      expect(asked, mode).toBe(1)
    }
  })

  it('a statement from describe() is used in a confining mode', async () => {
    const described = { ...info, confinement: 'Described confinement.' } as SandboxRunnerInfo
    const { text } = await announced(undefined, described, 'read-only')
    expect(text).toEqual(['[sandbox policy] Described confinement. A remote note.'])
  })

  it('in danger-full-access a provider that states nothing is not asked, and the policy is announced', async () => {
    const described = { ...info, confinement: 'Described confinement.' } as SandboxRunnerInfo
    const { text, asked, policy } = await announced(undefined, described, 'danger-full-access')
    expect(asked).toBe(0)
    expect(text).toEqual([policy])
  })
})
