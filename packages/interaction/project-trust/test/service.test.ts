// ctx.projectTrust on the real agent loop with the real user-questions seam: a gated source starts
// at once when its content is trusted; otherwise the first step asks a human answerer (named in
// askVia) once, or, with none, skips it with one stderr line.
import { mkdirSync, mkdtempSync, realpathSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, it, vi } from 'vitest'
import type { Context } from 'cordis'
import { createHarness, type Harness } from '@dsh/agent-loop-testkit'
import HomePaths from '@dsh/home-paths'
import UserQuestions, { type QuestionsRequest } from '@dsh/user-questions'
import ProjectTrust, {
  SKIP_OPTION,
  TRUST_OPTION,
  TrustStore,
  type Evaluation,
  type TrustRequest,
} from '../src/index.ts'

let harness: Harness | undefined
afterEach(async () => {
  await harness?.dispose()
  harness = undefined
  vi.restoreAllMocks()
})

function fixture() {
  const root = realpathSync(mkdtempSync(join(tmpdir(), 'dsh-trust-service-')))
  const project = join(root, 'project')
  mkdirSync(project)
  return { root, project, home: join(root, 'home') }
}

const request = (dir: string, command = 'sh -c run'): TrustRequest => ({
  source: 'mcp',
  label: 'MCP servers',
  dir,
  items: [{ file: '.mcp.json', kind: 'mcp-server', name: 'pwn', display: command, run: { command } }],
})

/** A gated source: records when the gate starts it. */
function gated(req: TrustRequest, started: string[]) {
  return {
    name: 'gated-source',
    inject: ['projectTrust'],
    apply(ctx: Context) {
      ctx.effect(() => ctx.projectTrust.gate(req, () => void started.push(req.source)), 'test gate')
    },
  }
}

/** An answerer that records the batches it saw and answers with `label`. */
function answerer(name: string, label: string | undefined, asked: QuestionsRequest[]) {
  return {
    name: `answerer-${name}`,
    inject: ['userQuestions'],
    apply(ctx: Context) {
      ctx.userQuestions.registerAnswerer({
        name,
        answer: (req) => {
          asked.push(req)
          if (label === undefined) throw new Error('the human closed the panel')
          return { trust: { selected: [label] } }
        },
      })
    },
  }
}

async function boot(home: string, plugins: Array<[unknown, unknown?]>, config: object = {}) {
  harness = await createHarness({
    script: [{ text: 'ok' }, { text: 'ok' }] as never,
    plugins: [[HomePaths, { home }], [UserQuestions], [ProjectTrust, config], ...plugins] as never,
  })
  return harness
}

function stderrLines() {
  const lines: string[] = []
  const original = process.stderr.write.bind(process.stderr)
  vi.spyOn(process.stderr, 'write').mockImplementation(((chunk: string | Uint8Array, ...rest: unknown[]) => {
    if (String(chunk).startsWith('dsh:')) lines.push(...String(chunk).trimEnd().split('\n'))
    else return original(chunk as never, ...(rest as []))
    return true
  }) as never)
  return lines
}

describe('@dsh/project-trust', () => {
  it('with no human at hand skips an untrusted source with one stderr line, and never starts it', async () => {
    const { project, home } = fixture()
    const lines = stderrLines()
    const started: string[] = []
    const skipped: Array<[Evaluation[], string]> = []
    const h = await boot(home, [[gated(request(project), started)]])
    h.ctx.on('project-trust/skipped', (evaluations, reason) => void skipped.push([evaluations, reason]))
    expect(h.ctx.projectTrust.pending().map((e) => e.source)).toEqual(['mcp'])
    await h.prompt('hello')
    await h.prompt('again')
    expect(started).toEqual([])
    expect(skipped.map(([e, reason]) => [e.map((x) => x.source), reason])).toEqual([[['mcp'], 'no-human']])
    expect(lines).toEqual([
      `dsh: ${project} is not trusted, so its MCP servers (pwn) did not start; review and trust them with "dsh trust ${project}" (undo: "dsh trust --revoke ${project}"; all: "dsh trust --list")`,
    ])
  })

  it('asks a human once, showing the command; a yes starts the source and is remembered for this content', async () => {
    const { project, home } = fixture()
    const asked: QuestionsRequest[] = []
    const started: string[] = []
    const h = await boot(home, [[answerer('tui', TRUST_OPTION, asked)], [gated(request(project), started)]])
    await h.prompt('hello')
    await h.prompt('again')
    expect(asked).toHaveLength(1)
    expect(asked[0]!.sessionId).toBe(h.session.id)
    expect(asked[0]!.questions[0]!.question).toContain(`- MCP servers: pwn (.mcp.json): sh -c run`)
    expect(started).toEqual(['mcp'])
    await h.dispose()

    // The next run starts it at once, without a question; changed content is pending again.
    const again: string[] = []
    harness = await createHarness({
      plugins: [[HomePaths, { home }], [ProjectTrust, {}], [gated(request(project), again)]] as never,
    })
    expect(again).toEqual(['mcp'])
    const changed: string[] = []
    await harness.mount(gated(request(project, 'sh -c other') as TrustRequest, changed) as never)
    expect(changed).toEqual([])
    expect(harness.ctx.projectTrust.pending()).toHaveLength(1)
  })

  it('a no (or a closed panel) leaves the source stopped and the store untouched', async () => {
    for (const label of [SKIP_OPTION, undefined]) {
      const { project, home } = fixture()
      const asked: QuestionsRequest[] = []
      const started: string[] = []
      const h = await boot(home, [[answerer('web', label, asked)], [gated(request(project), started)]])
      await h.prompt('hello')
      await h.prompt('again')
      expect(asked).toHaveLength(1)
      expect(started).toEqual([])
      expect(new TrustStore(join(home, 'trusted-projects.json')).list()).toEqual([])
      await h.dispose()
      harness = undefined
    }
  })

  it('does not ask answerers outside askVia (an editor or SDK client), nor with ask: never', async () => {
    for (const [name, config] of [
      ['acp', {}],
      ['tui', { ask: 'never' }],
    ] as const) {
      const { project, home } = fixture()
      const lines = stderrLines()
      const asked: QuestionsRequest[] = []
      const started: string[] = []
      const h = await boot(home, [[answerer(name, TRUST_OPTION, asked)], [gated(request(project), started)]], config)
      await h.prompt('hello')
      expect(asked).toEqual([])
      expect(started).toEqual([])
      expect(lines.filter((l) => l.includes('is not trusted'))).toHaveLength(1)
      await h.dispose()
      harness = undefined
      vi.restoreAllMocks()
    }
  })

  it('with a damaged store warns once, trusts nothing and keeps the file', async () => {
    const { project, home } = fixture()
    mkdirSync(home, { recursive: true })
    writeFileSync(join(home, 'trusted-projects.json'), '{"version": 1, "projects": ', { mode: 0o600 })
    const lines = stderrLines()
    const started: string[] = []
    const h = await boot(home, [
      [gated(request(project), started)],
      [gated({ ...request(project), source: 'hooks-claude-code' }, started)],
    ])
    await h.prompt('hello')
    expect(started).toEqual([])
    expect(lines.filter((l) => l.includes('damaged'))).toEqual([
      `dsh: warning: ${join(home, 'trusted-projects.json')}: damaged: not valid JSON (Unexpected end of JSON input); no project counts as trusted until the file is fixed or moved away`,
    ])
    expect(lines.filter((l) => l.includes('is not trusted'))).toHaveLength(1)
  })

  it('a source with nothing to run is not gated', async () => {
    const { project, home } = fixture()
    const started: string[] = []
    const h = await boot(home, [[gated({ ...request(project), items: [] }, started)]])
    expect(h.ctx.projectTrust.pending()).toEqual([])
    expect(started).toEqual([])
  })
})
