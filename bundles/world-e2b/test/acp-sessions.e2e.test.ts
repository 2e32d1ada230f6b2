// `dsh-acp --world e2b` with two sessions in two folders, driven by the official ACP SDK (the
// cli-testkit client), E2B played by @dsh/e2b-standin and the model by @dsh/llm-mock-server. Each
// session's folder (its `session/new` cwd) travels into a sandbox of its own, not the process's
// folder; when a turn leaves a change the client is asked with `session/request_permission`: an
// allow applies it to that session's folder, a reject or a failed answer keeps only the patch.
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { startMockServer, type MockServer } from '@dsh/llm-mock-server'
import { startE2bStandin, type E2bStandin } from '@dsh/e2b-standin'
import { initialize, startAcp, workspace } from '@dsh/cli-testkit/acp'

vi.setConfig({ testTimeout: 90_000, hookTimeout: 60_000 })

let standin: E2bStandin
let server: MockServer
beforeAll(async () => {
  standin = await startE2bStandin()
  server = await startMockServer({
    steps: [
      // session one, turn 1
      { toolCalls: [{ name: 'bash', arguments: { command: 'ls; echo one > one-made.txt', description: 'look' } }] },
      { text: 'Made one.' },
      // session two, turn 1
      { toolCalls: [{ name: 'bash', arguments: { command: 'ls; echo two > two-made.txt', description: 'look' } }] },
      { text: 'Made two.' },
      // session one, turn 2: the client's answer fails
      { toolCalls: [{ name: 'write', arguments: { file_path: 'again.txt', content: 'again\n' } }] },
      { text: 'Made again.' },
    ] as never,
  })
})
afterAll(async () => {
  await server?.close()
  await standin?.close()
})

const toolResult = (i: number) =>
  (server.requests[i].body as { messages: { role: string; content: string }[] }).messages
    .filter((m) => m.role === 'tool')
    .at(-1)?.content

describe('dsh-acp --world e2b, a session per folder', () => {
  it("uploads each session's folder to its own sandbox and asks before applying its change", async () => {
    const { root, home } = workspace()
    writeFileSync(join(root, 'process-folder.txt'), 'the process folder\n')
    const one = join(root, 'one')
    const two = join(root, 'two')
    mkdirSync(one)
    mkdirSync(two)
    writeFileSync(join(one, 'in-one.txt'), '1\n')
    writeFileSync(join(two, 'in-two.txt'), '2\n')
    const before = new Set(standin.sandboxes().map((x) => x.record.id))
    const p = await startAcp(
      { DSH_HOME: home, DEEPSEEK_BASE_URL: server.baseURL, DEEPSEEK_API_KEY: 'sk-test-not-a-real-key', ...standin.env },
      root,
      ['--world', 'e2b'],
    )
    await initialize(p.agent)
    const a = (await p.agent.request('session/new', { cwd: one, mcpServers: [] })).sessionId
    const b = (await p.agent.request('session/new', { cwd: two, mcpServers: [] })).sessionId

    // Session one: its folder is what the sandbox holds; the client allows the change.
    p.onPermission = (request) => ({
      outcome: { outcome: 'selected', optionId: request.options.find((o) => o.kind === 'allow_once')!.optionId },
    })
    const first = await p.agent.request('session/prompt', { sessionId: a, prompt: [{ type: 'text', text: 'one' }] })
    expect(first.stopReason, p.stderr()).toBe('end_turn')
    expect(toolResult(1)).toContain('in-one.txt')
    expect(toolResult(1)).not.toMatch(/in-two|process-folder/)
    expect(p.permissions).toHaveLength(1)
    expect(p.permissions[0].sessionId).toBe(a)
    expect(p.permissions[0].toolCall.title).toContain(one)
    expect(p.permissions[0].toolCall.title).toContain('one-made.txt')
    // The options say what they do here.
    expect(p.permissions[0].options.map((o) => [o.kind, o.name])).toEqual([
      ['allow_once', `Apply it to ${one}`],
      ['reject_once', 'Keep the patch file only'],
    ])
    // Applied to the session's folder, before the prompt's answer.
    expect(readFileSync(join(one, 'one-made.txt'), 'utf8')).toBe('one\n')

    // Session two: another sandbox, holding its own folder; the client rejects: the patch is kept.
    p.onPermission = (request) => ({
      outcome: { outcome: 'selected', optionId: request.options.find((o) => o.kind === 'reject_once')!.optionId },
    })
    const second = await p.agent.request('session/prompt', { sessionId: b, prompt: [{ type: 'text', text: 'two' }] })
    expect(second.stopReason, p.stderr()).toBe('end_turn')
    expect(toolResult(3)).toContain('in-two.txt')
    expect(toolResult(3)).not.toMatch(/in-one|one-made|process-folder/)
    expect(p.permissions).toHaveLength(2)
    expect(p.permissions[1].sessionId).toBe(b)
    expect(existsSync(join(two, 'two-made.txt'))).toBe(false)
    const kept = /kept the patch (\S+); (\S+) was left as it was/.exec(p.stderr())
    expect(kept, p.stderr()).not.toBeNull()
    expect(kept![2]).toBe(two)
    expect(readFileSync(kept![1], 'utf8')).toContain('+two')

    const mine = standin.sandboxes().filter((x) => !before.has(x.record.id))
    // Exactly one sandbox per folder: none for the process's folder.
    expect(mine).toHaveLength(2)
    const holding = (dir: string, file: string) =>
      mine.filter((x) => existsSync(join(standin.rootOf(x.record.id), dir, file))).map((x) => x.record.id)
    expect(holding(one, 'in-one.txt')).toHaveLength(1)
    expect(holding(two, 'in-two.txt')).toHaveLength(1)
    expect(holding(one, 'in-one.txt')).not.toEqual(holding(two, 'in-two.txt'))
    expect(mine.some((x) => existsSync(join(standin.rootOf(x.record.id), root, 'process-folder.txt')))).toBe(false)

    // Session one again: the client's answer fails, so nothing is applied (fail closed).
    p.onPermission = () => {
      throw new Error('the editor crashed')
    }
    const third = await p.agent.request('session/prompt', { sessionId: a, prompt: [{ type: 'text', text: 'again' }] })
    expect(third.stopReason, p.stderr()).toBe('end_turn')
    expect(p.permissions).toHaveLength(3)
    // Only this turn's change is offered: the applied one is not offered twice.
    const offered = p.permissions[2].toolCall.content?.[0]
    expect(JSON.stringify(offered)).toContain('again.txt')
    expect(JSON.stringify(offered)).not.toContain('one-made.txt')
    expect(existsSync(join(one, 'again.txt'))).toBe(false)
    expect(p.stderr()).toMatch(/kept the patch \S+; \S+\/one was left as it was/)

    expect(await p.close()).toBe(0)
    for (const x of mine) expect(standin.get(x.record.id)).toBeUndefined()
    // Settled changes are not saved again at the end: nothing new was made after the offers.
    expect(p.stderr()).not.toMatch(/changed the workspace; patch saved/)
  })

  it('gives a subagent of a session in its own folder a copy of that folder', async () => {
    const { root, home } = workspace()
    writeFileSync(join(root, 'process-folder.txt'), 'the process folder\n')
    const three = join(root, 'three')
    mkdirSync(three)
    writeFileSync(join(three, 'in-three.txt'), '3\n')
    const model = await startMockServer({
      steps: [
        { toolCalls: [{ name: 'subagent', arguments: { description: 'look', prompt: 'list', world: 'e2b' } }] },
        { toolCalls: [{ name: 'bash', arguments: { command: 'pwd; ls; ls ..', description: 'look' } }] },
        { text: 'Child looked.' },
        { text: 'Parent done.' },
      ] as never,
    })
    try {
      const p = await startAcp(
        {
          DSH_HOME: home,
          DEEPSEEK_BASE_URL: model.baseURL,
          DEEPSEEK_API_KEY: 'sk-test-not-a-real-key',
          ...standin.env,
        },
        root,
        ['--world', 'e2b'],
      )
      await initialize(p.agent)
      const c = (await p.agent.request('session/new', { cwd: three, mcpServers: [] })).sessionId
      const done = await p.agent.request('session/prompt', { sessionId: c, prompt: [{ type: 'text', text: 'go' }] })
      expect(done.stopReason, p.stderr()).toBe('end_turn')
      const listed = (model.requests[2].body as { messages: { role: string; content: string }[] }).messages
        .filter((m) => m.role === 'tool')
        .at(-1)?.content
      expect(listed).toContain(three)
      expect(listed).toContain('in-three.txt')
      expect(listed).not.toContain('process-folder')
      // Nothing changed, so nothing was offered.
      expect(p.permissions).toHaveLength(0)
      expect(await p.close()).toBe(0)
    } finally {
      await model.close()
    }
  })
})
