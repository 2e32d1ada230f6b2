// End-to-end: the real `dsh --profile headless` against @dsh/llm-mock-server, whose captured
// requests show what the model was sent. One scripted session (shared by the first tests):
//   request 0: the model asks load_tools for a mistyped name -> an error naming near matches
//   request 1: load_tools job_list                          -> loaded
//   request 2: job_list (now in the tool list)              -> runs
//   request 3: schedule_list, never loaded, called directly -> runs and is loaded on the fly
//   request 4: the answer
// then `dsh -c` resumes the session: request 5 still carries both schemas.
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startMockServer, type MockServer, type RecordedRequest } from '@dsh/llm-mock-server'
import { runDsh } from '@dsh/cli-testkit'

interface WireTool {
  function: { name: string; description: string; parameters: unknown }
}
interface WireBody {
  messages: Array<{ role: string; content: unknown; tool_call_id?: string }>
  tools?: WireTool[]
}

const body = (r: RecordedRequest) => r.body as WireBody
const toolNames = (r: RecordedRequest) => (body(r).tools ?? []).map((t) => t.function.name)
const system = (r: RecordedRequest) =>
  body(r)
    .messages.filter((m) => m.role === 'system')
    .map((m) => String(m.content))
    .join('\n')
const toolMessage = (r: RecordedRequest, callId: string) =>
  String(body(r).messages.find((m) => m.role === 'tool' && m.tool_call_id === callId)?.content ?? '')
/** The catalogue: the `- name: purpose` lines of load_tools' description. */
const catalogue = (r: RecordedRequest) =>
  (body(r).tools ?? [])
    .find((t) => t.function.name === 'load_tools')
    ?.function.description.split('\n')
    .flatMap((line) => /^- ([A-Za-z0-9_-]+): /.exec(line)?.[1] ?? []) ?? []

const root = mkdtempSync(join(tmpdir(), 'dsh-tool-deferral-'))
const servers: MockServer[] = []
const call = (id: string, name: string, args: object) => ({ toolCalls: [{ id, name, arguments: args }] })

/** Runs the headless bin against a fresh mock server with `steps`; returns its captured requests. */
async function headless(
  name: string,
  steps: object[],
  extra: string[] = [],
  dirs?: { home: string; cwd: string },
): Promise<{ requests: RecordedRequest[]; home: string; cwd: string }> {
  const server = await startMockServer({ steps: steps as never })
  servers.push(server)
  const home = dirs?.home ?? join(root, name, 'home')
  const cwd = dirs?.cwd ?? join(root, name, 'work')
  mkdirSync(cwd, { recursive: true })
  const run = await runDsh(['--profile', 'headless', ...extra, 'go'], {
    cwd,
    env: { DSH_HOME: home, DEEPSEEK_BASE_URL: server.baseURL, DEEPSEEK_API_KEY: 'sk-test' },
  })
  expect(run.stderr).toBe('')
  expect(run.code).toBe(0)
  return {
    requests: server.requests.filter((r) => Array.isArray((r.body as WireBody | undefined)?.messages)),
    home,
    cwd,
  }
}

afterAll(async () => {
  for (const server of servers) await server.close()
})

describe('deferred tool schemas in the headless profile', () => {
  let session: RecordedRequest[]
  let resumed: RecordedRequest[]
  beforeAll(async () => {
    const first = await headless('session', [
      call('c_typo', 'load_tools', { names: ['job_lst'] }),
      call('c_load', 'load_tools', { names: ['job_list'] }),
      call('c_jobs', 'job_list', {}),
      call('c_direct', 'schedule_list', {}),
      { text: 'done' },
    ])
    session = first.requests
    const again = await headless('session', [{ text: 'still here' }], ['-c'], first)
    resumed = again.requests
  }, 60_000)

  it('the first request lists rarely used tools one line each, without their schemas or guidance', () => {
    const first = session[0]
    const names = toolNames(first)
    for (const core of ['bash', 'read', 'write', 'edit', 'glob', 'grep', 'load_tools']) expect(names).toContain(core)
    for (const rare of ['job_list', 'job_output', 'schedule_list', 'web_fetch', 'subagent']) {
      expect(names).not.toContain(rare)
      expect(catalogue(first)).toContain(rare)
    }
    expect(system(first)).not.toContain('Background jobs')
    expect(system(first)).toContain('Shell (bash):')
  })

  it('an unknown name is a clear error naming the near match, and loads nothing', () => {
    const text = toolMessage(session[1], 'c_typo')
    expect(text).toContain('Error [UNKNOWN_TOOL]: no tool named "job_lst" (did you mean job_list')
    expect(text).toContain('nothing was loaded')
    expect(toolNames(session[1])).not.toContain('job_list')
  })

  it('after load_tools the next request carries the schema (and its guidance), and the tool runs', () => {
    expect(toolMessage(session[2], 'c_load')).toContain('Loaded job_list')
    const tools = body(session[2]).tools ?? []
    const jobList = tools.find((t) => t.function.name === 'job_list')
    expect(jobList?.function.parameters).toMatchObject({ type: 'object' })
    expect(catalogue(session[2])).not.toContain('job_list')
    expect(system(session[2])).toContain('Background jobs')
    const result = toolMessage(session[3], 'c_jobs')
    expect(result).not.toContain('Error [')
    expect(result).toContain('No background jobs in this session.')
  })

  it('a deferred tool called directly runs, and its schema is sent from then on', () => {
    const result = toolMessage(session[4], 'c_direct')
    expect(result).not.toContain('Error [')
    expect(toolNames(session[3])).not.toContain('schedule_list')
    expect(toolNames(session[4])).toContain('schedule_list')
  })

  it('a resumed session (-c) still has the loaded tools', () => {
    expect(resumed).toHaveLength(1)
    const names = toolNames(resumed[0])
    expect(names).toContain('job_list')
    expect(names).toContain('schedule_list')
    expect(catalogue(resumed[0])).not.toContain('job_list')
  })
})

describe('every tool of the default profile stays callable', () => {
  it('each registered tool is sent in full or listed and loadable', async () => {
    const off = join(root, 'off.patch.yml')
    writeFileSync(off, '- id: tool-deferral\n  config:\n    enabled: false\n')
    // Deferral off: the request carries every tool the profile registers.
    const every = toolNames((await headless('off', [{ text: 'ok' }], ['--patch', off])).requests[0])
    expect(every).not.toContain('load_tools')
    expect(every.length).toBeGreaterThan(15)
    // Deferral on: each of them is either sent in full or listed in load_tools' catalogue.
    const first = (await headless('on', [{ text: 'ok' }])).requests[0]
    const listed = catalogue(first)
    const sent = toolNames(first).filter((n) => n !== 'load_tools')
    expect([...sent, ...listed].sort()).toEqual([...every].sort())
    expect(listed.length).toBeGreaterThan(0)
    // Loading every listed tool puts every registered tool into the next request.
    const loaded = (await headless('all', [call('c_all', 'load_tools', { names: listed }), { text: 'ok' }])).requests
    expect(toolMessage(loaded[1], 'c_all')).toContain(`Loaded ${listed.join(', ')}`)
    expect(toolNames(loaded[1]).sort()).toEqual([...every].sort())
  }, 60_000)
})

describe('bad configuration', () => {
  it('a defer key that is not a tool name, or a bad value, fails the boot with one line', async () => {
    const server = await startMockServer({ steps: [] as never })
    servers.push(server)
    const cwd = join(root, 'bad', 'work')
    mkdirSync(cwd, { recursive: true })
    const boot = async (config: string) => {
      const patch = join(root, 'bad', 'deferral.patch.yml')
      writeFileSync(patch, `- id: tool-deferral\n  config:\n${config}`)
      return runDsh(['--profile', 'headless', '--patch', patch, 'go'], {
        cwd,
        env: { DSH_HOME: join(root, 'bad', 'home'), DEEPSEEK_BASE_URL: server.baseURL, DEEPSEEK_API_KEY: 'sk-test' },
      })
    }
    const name = await boot('    defer:\n      "web fetch": true\n')
    expect(name.code).not.toBe(0)
    expect(name.stderr).toContain('tool-deferral: defer: "web fetch" is not a tool name')
    expect(name.stderr.trim().split('\n')).toHaveLength(1)
    const value = await boot('    defer:\n      web_fetch: sometimes\n')
    expect(value.code).not.toBe(0)
    expect(value.stderr).toContain('web_fetch')
    expect(value.stderr.trim().split('\n')).toHaveLength(1)
    expect(server.requests).toHaveLength(0)
  }, 30_000)
})
