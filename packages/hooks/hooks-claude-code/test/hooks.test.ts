// Claude Code hooks as real shell scripts, run on the real agent loop (scripted model).
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import type { Context } from 'cordis'
import { createHarness, type Harness } from '@dsh/agent-loop-testkit'
import SubprocessLocal from '@dsh/subprocess-local'
import type { HookRunRecord } from '@dsh/hook-protocol'
import * as HooksClaudeCode from '../src/index.ts'
import TokenMeter from '@dsh/token-meter'
import BasicCompactionEngine from '@dsh/compaction-basic'
import ApprovalService from '@dsh/user-approval'
import SubagentService from '@dsh/subagent'
import * as ToolSubagent from '@dsh/tool-subagent'
import HomePaths from '@dsh/home-paths'
import ProjectTrust, { TrustStore, trustAll, TRUST_OPTION } from '@dsh/project-trust'
import UserQuestions from '@dsh/user-questions'

let harness: Harness | undefined
afterEach(async () => {
  await harness?.dispose()
  harness = undefined
})

/** A stand-in for the shell tool: records the command it was given, runs nothing. */
const FakeBash = {
  name: 'fake-bash',
  inject: ['tools'],
  apply(ctx: Context) {
    ctx.tools.register<{ command: string }>({
      name: 'bash',
      description: 'Run a command.',
      parameters: { type: 'object', properties: { command: { type: 'string' } }, required: ['command'] },
      execute: (args) => ({ content: `ran: ${args.command}` }),
    })
  },
}

function workspace() {
  const root = mkdtempSync(join(tmpdir(), 'dsh-cc-hooks-'))
  const cwd = join(root, 'project')
  const home = join(root, 'home')
  mkdirSync(join(cwd, '.claude'), { recursive: true })
  mkdirSync(join(home, '.claude'), { recursive: true })
  const script = (name: string, body: string) => {
    const path = join(root, name)
    writeFileSync(path, `#!/bin/sh\n${body}\n`)
    chmodSync(path, 0o755)
    return path
  }
  return { root, cwd, home, script }
}

/**
 * The project's hook files run only once the user trusted them (@dsh/project-trust): these tests
 * trust what the project holds when they boot, as `dsh trust` would, and mount the trust rows.
 */
async function trusted(ws: ReturnType<typeof workspace>, config: object = {}): Promise<Array<[unknown, unknown?]>> {
  const dshHome = join(ws.root, 'dsh-home')
  await trustAll(
    TrustStore.inHome(dshHome),
    HooksClaudeCode.projectTrustRequests({ cwd: ws.cwd, userHome: ws.home, ...config }, ws.cwd),
  )
  return [
    [HomePaths, { home: dshHome }],
    [ProjectTrust, {}],
  ]
}

async function boot(ws: ReturnType<typeof workspace>, script: unknown[], config: object = {}) {
  harness = await createHarness({
    cwd: ws.cwd,
    script: script as never,
    plugins: [
      ...(await trusted(ws, config)),
      [SubprocessLocal, {}],
      [FakeBash],
      [HooksClaudeCode, { cwd: ws.cwd, userHome: ws.home, ...config }],
    ] as never,
  })
  return harness
}

const results = (h: Harness) =>
  h.session.events
    .filter((e) => e.type === 'tool/result')
    .map((e) => e.data as { message: { content: { text: string }[] }; error?: { code: string } })
const runs = (h: Harness) => h.session.events.filter((e) => e.type === 'hook/run').map((e) => e.data as HookRunRecord)
async function until(probe: () => boolean) {
  for (let i = 0; i < 500 && !probe(); i++) await new Promise((resolve) => setTimeout(resolve, 20))
}
const bash = (command: string) => ({ toolCalls: [{ name: 'bash', arguments: { command } }] })

describe('@dsh/hooks-claude-code', () => {
  it("runs the user's hooks but not the project's until the project is trusted (no trust row: never)", async () => {
    for (const withTrustRow of [true, false]) {
      const ws = workspace()
      const userLog = join(ws.root, 'user.log')
      const projectLog = join(ws.root, 'project.log')
      const hook = (command: string) =>
        JSON.stringify({ hooks: { UserPromptSubmit: [{ hooks: [{ type: 'command', command }] }] } })
      writeFileSync(join(ws.home, '.claude/settings.json'), hook(`echo user >> ${userLog}`))
      writeFileSync(join(ws.cwd, '.claude/settings.local.json'), hook(`echo project >> ${projectLog}`))
      const trustRows = withTrustRow
        ? [
            [HomePaths, { home: join(ws.root, 'dsh-home') }],
            [ProjectTrust, {}],
          ]
        : []
      harness = await createHarness({
        cwd: ws.cwd,
        script: [{ text: 'ok' }] as never,
        plugins: [...trustRows, [SubprocessLocal, {}], [HooksClaudeCode, { cwd: ws.cwd, userHome: ws.home }]] as never,
      })
      await harness.prompt('hello')
      expect(readFileSync(userLog, 'utf8')).toBe('user\n')
      expect(existsSync(projectLog)).toBe(false)
      await harness.dispose()
      harness = undefined
    }
  })

  it('a project SessionStart hook trusted at the first step (a human said yes) runs at that step', async () => {
    const ws = workspace()
    writeFileSync(
      join(ws.cwd, '.claude/settings.json'),
      JSON.stringify({
        hooks: { SessionStart: [{ hooks: [{ type: 'command', command: 'cat >/dev/null; echo "project context"' }] }] },
      }),
    )
    writeFileSync(
      join(ws.home, '.claude/settings.json'),
      JSON.stringify({
        hooks: { SessionStart: [{ hooks: [{ type: 'command', command: 'cat >/dev/null; echo "user context"' }] }] },
      }),
    )
    const asked: string[] = []
    const human = {
      name: 'human',
      inject: ['userQuestions'],
      apply(ctx: Context) {
        ctx.userQuestions.registerAnswerer({
          name: 'tui',
          answer: (request) => (asked.push(request.questions[0]!.question), { trust: { selected: [TRUST_OPTION] } }),
        })
      },
    }
    harness = await createHarness({
      cwd: ws.cwd,
      script: [{ text: 'ok' }] as never,
      plugins: [
        [HomePaths, { home: join(ws.root, 'dsh-home') }],
        [UserQuestions, {}],
        [ProjectTrust, {}],
        [human],
        [SubprocessLocal, {}],
        [HooksClaudeCode, { cwd: ws.cwd, userHome: ws.home }],
      ] as never,
    })
    await harness.prompt('hello')
    expect(asked).toHaveLength(1)
    const sent = JSON.stringify(harness.model.requests[0]!.messages)
    expect(sent).toContain('user context')
    expect(sent).toContain('project context')
    expect(sent.indexOf('user context')).toBeLessThan(sent.indexOf('hello'))
    expect(sent.indexOf('project context')).toBeLessThan(sent.indexOf('hello'))
  })

  it('a trusted project hook stops running once a script it executes is rewritten', async () => {
    const ws = workspace()
    const log = join(ws.root, 'hook.log')
    mkdirSync(join(ws.cwd, 'tools'))
    writeFileSync(join(ws.cwd, 'tools', 'check.sh'), `cat >/dev/null; echo original >> ${log}\n`)
    writeFileSync(
      join(ws.cwd, '.claude/settings.json'),
      JSON.stringify({
        hooks: {
          PreToolUse: [
            { matcher: 'Bash', hooks: [{ type: 'command', command: 'sh "$CLAUDE_PROJECT_DIR"/tools/check.sh' }] },
          ],
        },
      }),
    )
    const h = await boot(ws, [bash('ls'), bash('ls'), { text: 'done' }])
    // Between the two calls the script is rewritten, as a confined command could do.
    h.ctx.on('tools/result', () =>
      writeFileSync(join(ws.cwd, 'tools', 'check.sh'), `cat >/dev/null; echo rewritten >> ${log}\n`),
    )
    await h.prompt('list twice')
    expect(readFileSync(log, 'utf8')).toBe('original\n')
    expect(runs(h).map((r) => r.outcome)).toEqual(['ok'])
  })

  it("a project that is the user's home reads ~/.claude/settings.json as the user's file", async () => {
    const ws = workspace()
    const log = join(ws.root, 'home.log')
    writeFileSync(
      join(ws.home, '.claude/settings.json'),
      JSON.stringify({
        hooks: { UserPromptSubmit: [{ hooks: [{ type: 'command', command: `echo home >> ${log}` }] }] },
      }),
    )
    expect(HooksClaudeCode.projectTrustRequests({ userHome: ws.home }, ws.home)[0]!.items).toEqual([])
    harness = await createHarness({
      cwd: ws.home,
      script: [{ text: 'ok' }] as never,
      plugins: [
        [HomePaths, { home: join(ws.root, 'dsh-home') }],
        [ProjectTrust, {}],
        [SubprocessLocal, {}],
        [HooksClaudeCode, { cwd: ws.home, userHome: ws.home }],
      ] as never,
    })
    await harness.prompt('hello')
    expect(readFileSync(log, 'utf8')).toBe('home\n')
  })

  it('PreToolUse: a project hook that exits 2 blocks rm and feeds stderr to the model; other commands run', async () => {
    const ws = workspace()
    const capture = join(ws.root, 'stdin.json')
    const guard = ws.script(
      'guard.sh',
      `input=$(cat)\nprintf '%s' "$input" > ${capture}\ncase "$input" in *'"rm '*) echo "rm is not allowed here; move files to ./trash instead" >&2; exit 2;; esac\nexit 0`,
    )
    writeFileSync(
      join(ws.cwd, '.claude/settings.json'),
      JSON.stringify({ hooks: { PreToolUse: [{ matcher: 'Bash', hooks: [{ type: 'command', command: guard }] }] } }),
    )
    const h = await boot(ws, [bash('rm -rf build'), bash('ls'), { text: 'done' }])
    await h.prompt('clean up')
    const [denied, allowed] = results(h)
    expect(denied.error?.code).toBe('HOOK_DENIED')
    expect(denied.message.content[0].text).toBe(
      'Error [HOOK_DENIED]: the call to tool "bash" was not run: a PreToolUse hook blocked it: rm is not allowed here; move files to ./trash instead',
    )
    expect(allowed.message.content[0].text).toBe('ran: ls')
    const stdin = JSON.parse(readFileSync(capture, 'utf8'))
    expect(stdin).toMatchObject({
      session_id: h.session.id,
      cwd: ws.cwd,
      hook_event_name: 'PreToolUse',
      tool_name: 'Bash',
      tool_input: { command: 'ls' },
    })
    expect(runs(h).map((r) => [r.event, r.toolName, r.outcome, r.exitCode])).toEqual([
      ['PreToolUse', 'Bash', 'block', 2],
      ['PreToolUse', 'Bash', 'ok', 0],
    ])
    expect(runs(h)[0]).toMatchObject({
      dialect: 'claude-code',
      origin: join(ws.cwd, '.claude/settings.json'),
      input: { tool_input: { command: 'rm -rf build' } },
    })
  })

  it('PreToolUse JSON: permissionDecision deny, and updatedInput rewrites the arguments', async () => {
    const ws = workspace()
    const deny = ws.script(
      'deny.sh',
      `cat >/dev/null; echo '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"no network"}}'`,
    )
    const rewrite = ws.script(
      'rewrite.sh',
      `cat >/dev/null; echo '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"allow","updatedInput":{"command":"ls -la"}}}'`,
    )
    const h = await boot(ws, [bash('curl example.com'), bash('ls'), { text: 'done' }], {
      hooks: {
        PreToolUse: [
          {
            matcher: 'Bash',
            hooks: [{ type: 'command', command: `case "$(cat)" in *curl*) ${deny};; *) ${rewrite};; esac` }],
          },
        ],
      },
    })
    await h.prompt('go')
    const [first, second] = results(h)
    expect(first.message.content[0].text).toContain('a PreToolUse hook blocked it: no network')
    expect(second.message.content[0].text).toBe('ran: ls -la')
  })

  it('UserPromptSubmit: plain stdout becomes context the model sees; exit 2 blocks the prompt', async () => {
    const ws = workspace()
    const hook = ws.script(
      'prompt.sh',
      `case "$(cat)" in *secret*) echo "prompts must not contain secrets" >&2; exit 2;; esac\necho "Project codename: BLUE"`,
    )
    writeFileSync(
      join(ws.home, '.claude/settings.json'),
      JSON.stringify({ hooks: { UserPromptSubmit: [{ hooks: [{ type: 'command', command: hook }] }] } }),
    )
    const h = await boot(ws, [{ text: 'ok' }])
    await h.prompt('what is the codename?')
    const messages = JSON.stringify(h.model.requests[0].messages)
    expect(messages).toContain('what is the codename?')
    expect(messages).toContain('Project codename: BLUE')
    const blocked = await h.prompt('here is my secret')
    expect(blocked.reason).toBe('blocked')
    expect(blocked.error).toEqual({
      code: 'HOOK_BLOCKED',
      message: 'a UserPromptSubmit hook blocked the prompt: prompts must not contain secrets',
    })
    expect(h.model.requests).toHaveLength(1)
  })

  it('PostToolUse: a JSON block decision and additional context are appended to the result', async () => {
    const ws = workspace()
    const hook = ws.script(
      'post.sh',
      `cat >/dev/null; echo '{"decision":"block","reason":"lint failed: missing semicolon","hookSpecificOutput":{"hookEventName":"PostToolUse","additionalContext":"run npm run lint:fix"}}'`,
    )
    const h = await boot(ws, [bash('npm test'), { text: 'done' }], {
      hooks: { PostToolUse: [{ matcher: 'Bash|Write', hooks: [{ type: 'command', command: hook }] }] },
    })
    await h.prompt('test it')
    expect(results(h)[0].message.content[0].text).toBe(
      'ran: npm test\n\n[PostToolUse hook feedback] lint failed: missing semicolon\n[PostToolUse hook context] run npm run lint:fix',
    )
  })

  it('a hook that times out is stopped, logged, and does not block the call', async () => {
    const ws = workspace()
    const h = await boot(ws, [bash('ls'), { text: 'done' }], {
      hooks: { PreToolUse: [{ hooks: [{ type: 'command', command: 'sleep 30', timeout: 0.3 }] }] },
    })
    await h.prompt('go')
    expect(results(h)[0].message.content[0].text).toBe('ran: ls')
    expect(runs(h)[0]).toMatchObject({
      outcome: 'timeout',
      message: 'the hook did not finish within 0.3 s and was stopped',
    })
  })

  it('Stop: exit 2 makes the agent continue with the reason, once; stop_hook_active is set the second time', async () => {
    const ws = workspace()
    const seen = join(ws.root, 'stop-inputs')
    const hook = ws.script(
      'stop.sh',
      `input=$(cat)\necho "$input" >> ${seen}\ncase "$input" in *'"stop_hook_active":false'*) echo "run the tests before finishing" >&2; exit 2;; esac\nexit 0`,
    )
    const h = await boot(ws, [{ text: 'finished' }, { text: 'tests pass' }], {
      hooks: { Stop: [{ hooks: [{ type: 'command', command: hook }] }] },
    })
    await h.prompt('do it')
    await h.agent.idle()
    expect(h.model.requests).toHaveLength(2)
    expect(JSON.stringify(h.model.requests[1].messages.at(-1))).toContain('run the tests before finishing')
    const inputs = readFileSync(seen, 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l))
    expect(inputs.map((i) => i.stop_hook_active)).toEqual([false, true])
  })

  it('skips malformed entries and unsupported events with warnings; the good hooks still run', async () => {
    const ws = workspace()
    const mark = join(ws.root, 'ran')
    writeFileSync(join(ws.cwd, '.claude/settings.local.json'), '{ not json')
    const h = await boot(ws, [bash('ls'), { text: 'done' }], {
      hooks: {
        PreToolUse: [
          {
            matcher: 'Bash',
            hooks: [
              { type: 'prompt', prompt: 'x' },
              { type: 'command' },
              { type: 'command', command: `touch ${mark}` },
            ],
          },
          'nonsense',
        ],
        PostCompact: [{ hooks: [{ type: 'command', command: 'true' }] }],
        Bogus: [],
      },
    })
    await h.prompt('go')
    expect(existsSync(mark)).toBe(true)
    expect(results(h)[0].message.content[0].text).toBe('ran: ls')
  })

  it('SessionStart: what the hook prints is context in the first request; SessionEnd runs when the agent goes', async () => {
    const ws = workspace()
    const ended = join(ws.root, 'ended.json')
    const h = await boot(ws, [{ text: 'hi' }], {
      hooks: {
        SessionStart: [
          {
            matcher: 'startup',
            hooks: [{ type: 'command', command: 'cat >/dev/null; sleep 0.3; echo "Branch: main, 2 files changed"' }],
          },
        ],
        SessionEnd: [{ hooks: [{ type: 'command', command: `cat > ${ended}` }] }],
      },
    })
    await h.prompt('status?')
    expect(JSON.stringify(h.model.requests[0].messages)).toContain('Branch: main, 2 files changed')
    expect(runs(h).map((r) => [r.event, r.outcome])).toEqual([['SessionStart', 'ok']])
    await h.agent.dispose()
    await until(() => existsSync(ended) && readFileSync(ended, 'utf8').length > 0)
    expect(JSON.parse(readFileSync(ended, 'utf8'))).toMatchObject({
      hook_event_name: 'SessionEnd',
      reason: 'other',
      session_id: h.session.id,
    })
  })

  it('reports the problems of a hooks table one by one', () => {
    const { entries, problems } = HooksClaudeCode.checkHooks(
      {
        PreToolUse: [
          {
            matcher: 'Bash',
            hooks: [
              { type: 'prompt' },
              { type: 'command', command: 'ok', timeout: -1 },
              { type: 'command', command: 'good', timeout: 2 },
            ],
          },
        ],
        PostCompact: [],
        Nope: [],
      },
      'settings.json',
      60_000,
    )
    expect(entries).toEqual([
      { event: 'PreToolUse', matcher: 'Bash', command: 'good', timeoutMs: 2000, origin: 'settings.json' },
    ])
    expect(problems).toEqual([
      'settings.json: hooks.PreToolUse[0].hooks[0]: only type "command" is supported, not "prompt"',
      'settings.json: hooks.PreToolUse[0].hooks[1].timeout must be a positive number of seconds',
      'settings.json: PostCompact hooks are not run by dsh yet; skipped',
      expect.stringMatching(/^settings.json: unknown hook event "Nope"/),
    ])
  })
})

describe('@dsh/hooks-claude-code: PreCompact, Notification, SubagentStop', () => {
  it('PreCompact runs before a /compact-style compaction with its trigger and focus, and is logged before the history changes', async () => {
    const ws = workspace()
    const capture = join(ws.root, 'precompact.json')
    const hook = ws.script('precompact.sh', `cat > ${capture}`)
    writeFileSync(
      join(ws.cwd, '.claude/settings.json'),
      JSON.stringify({ hooks: { PreCompact: [{ matcher: 'manual', hooks: [{ type: 'command', command: hook }] }] } }),
    )
    harness = await createHarness({
      cwd: ws.cwd,
      script: [{ text: 'first answer' }, { text: 'second answer' }, { text: 'A summary of the work so far.' }] as never,
      plugins: [
        ...(await trusted(ws)),
        [SubprocessLocal, {}],
        [TokenMeter],
        [BasicCompactionEngine, { auto: false, keepRecentTokens: 0 }],
        [HooksClaudeCode, { cwd: ws.cwd, userHome: ws.home }],
      ] as never,
    })
    const h = harness
    await h.prompt('one')
    await h.prompt('two')
    const result = await h.ctx.compaction.compact(h.session, {
      reason: 'manual',
      focus: 'keep the API names',
      agent: h.agent,
    })
    expect(result.status).toBe('compacted')
    expect(JSON.parse(readFileSync(capture, 'utf8'))).toMatchObject({
      hook_event_name: 'PreCompact',
      session_id: h.session.id,
      trigger: 'manual',
      custom_instructions: 'keep the API names',
      cwd: ws.cwd,
    })
    const hookSeq = h.session.events.find((e) => e.type === 'hook/run')!.seq
    const replaceSeq = h.session.events.find((e) => e.type === 'surface/replace')!.seq
    expect(hookSeq).toBeLessThan(replaceSeq)
    expect(runs(h).map((r) => [r.event, r.outcome])).toEqual([['PreCompact', 'ok']])
  })

  it('Notification runs when an approval is requested, with the request in its message', async () => {
    const ws = workspace()
    const capture = join(ws.root, 'notification.json')
    const hook = ws.script('notify.sh', `cat > ${capture}.tmp && mv ${capture}.tmp ${capture}`)
    writeFileSync(
      join(ws.cwd, '.claude/settings.json'),
      JSON.stringify({ hooks: { Notification: [{ hooks: [{ type: 'command', command: hook }] }] } }),
    )
    harness = await createHarness({
      cwd: ws.cwd,
      plugins: [
        ...(await trusted(ws)),
        [SubprocessLocal, {}],
        [ApprovalService, {}],
        [HooksClaudeCode, { cwd: ws.cwd, userHome: ws.home }],
      ] as never,
    })
    const h = harness
    // No answerer is mounted: the request resolves `unavailable`, after it was announced.
    const outcome = await h.ctx.approval.request({
      sessionId: h.session.id,
      kind: 'command',
      title: 'Run "rm -rf build" outside the sandbox',
      action: { argv: ['rm', '-rf', 'build'] },
    })
    expect(outcome.decision).toBe('unavailable')
    await until(() => existsSync(capture))
    expect(JSON.parse(readFileSync(capture, 'utf8'))).toMatchObject({
      hook_event_name: 'Notification',
      session_id: h.session.id,
      notification_type: 'permission_prompt',
      message: 'dsh needs your permission: Run "rm -rf build" outside the sandbox',
    })
    await until(() => runs(h).length > 0)
    expect(runs(h).map((r) => r.event)).toEqual(['Notification'])
  })

  it('SubagentStop runs for a subagent child (with the child session id); Stop runs for the parent only', async () => {
    const ws = workspace()
    const sub = join(ws.root, 'subagent-stop.jsonl')
    const stop = join(ws.root, 'stop.jsonl')
    writeFileSync(
      join(ws.cwd, '.claude/settings.json'),
      JSON.stringify({
        hooks: {
          SubagentStop: [
            { hooks: [{ type: 'command', command: ws.script('sub.sh', `cat >> ${sub}; echo >> ${sub}`) }] },
          ],
          Stop: [{ hooks: [{ type: 'command', command: ws.script('stop.sh', `cat >> ${stop}; echo >> ${stop}`) }] }],
        },
      }),
    )
    harness = await createHarness({
      cwd: ws.cwd,
      script: [
        { toolCalls: [{ name: 'subagent', arguments: { description: 'look', prompt: 'Say what you see.' } }] },
        { text: 'child answer' },
        { text: 'parent done' },
      ] as never,
      plugins: [
        ...(await trusted(ws)),
        [SubprocessLocal, {}],
        [SubagentService, {}],
        [ToolSubagent, {}],
        [HooksClaudeCode, { cwd: ws.cwd, userHome: ws.home }],
      ] as never,
    })
    const h = harness
    await h.prompt('delegate')
    const lines = (file: string) =>
      existsSync(file)
        ? readFileSync(file, 'utf8')
            .trim()
            .split('\n')
            .filter(Boolean)
            .map((l) => JSON.parse(l))
        : []
    const subRuns = lines(sub)
    expect(subRuns).toHaveLength(1)
    expect(subRuns[0]).toMatchObject({ hook_event_name: 'SubagentStop', stop_hook_active: false })
    expect(subRuns[0].session_id).not.toBe(h.session.id)
    expect(lines(stop).map((r) => [r.hook_event_name, r.session_id])).toEqual([['Stop', h.session.id]])
  })
})
