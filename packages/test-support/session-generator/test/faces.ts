// Drivers for the three faces of the generated-session checks: the ACP `session/update` stream
// (the real `dsh-acp` bin with the ACP SDK's client side), the TUI's final screen (the real `dsh`
// in node-pty, its bytes fed to @xterm/headless) and the web page's DOM (the real `dsh web` in
// Chromium). Each reads back what it shows as a list of markers, for comparison with the log.
import { spawn } from 'node:child_process'
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { Writable } from 'node:stream'
import { fileURLToPath } from 'node:url'
import * as acp from '@agentclientprotocol/sdk'
import pty from 'node-pty'
import xterm from '@xterm/headless'
import { DSH_BIN, inheritedEnv } from '@dsh/cli-testkit'
import { randomUUID } from 'node:crypto'
import { writeFileSync, mkdirSync } from 'node:fs'
import { cwdKey, encodeLines, loadZstd, scanRaw, scanZstd } from '@dsh/session-persistence-jsonl'
import type { Page } from '@dsh/web-testkit'
import { markersIn, type LogEvent } from '../src/index.ts'

/** The suite's stack code cache directory, when its global setup named one (a pty wants strings). */
const compileCache = (): Record<string, string> =>
  process.env.NODE_COMPILE_CACHE ? { NODE_COMPILE_CACHE: process.env.NODE_COMPILE_CACHE } : {}

export const ACP_BIN = fileURLToPath(new URL('../../../acp/acp-app/bin/dsh-acp.mjs', import.meta.url))

/**
 * The stored log of a session under `home`, once it holds `turns` ended turns (appends reach the
 * disk in batches, shortly after the face saw them).
 */
export async function readLog(home: string, sessionId: string, turns = 0): Promise<LogEvent[]> {
  const deadline = Date.now() + 10_000
  for (;;) {
    const log = await readLogOnce(home, sessionId)
    if (log.filter((e) => e.type === 'turn/end').length >= turns) return log
    if (Date.now() > deadline) throw new Error(`the log of session ${sessionId} never held ${turns} ended turns`)
    await new Promise((r) => setTimeout(r, 50))
  }
}

/**
 * Writes `events` as a log in the format of dsh before call identities (issue 43): every call id
 * renamed by the loop (`providerCallId` present) is put back to the provider's id and the field
 * dropped, so ids repeat as they did. Returns the new session's id (stored under `home` for `cwd`).
 */
export function writeOldFormatLog(home: string, cwd: string, events: readonly LogEvent[]): string {
  const renamed = new Map<string, string>()
  for (const e of events)
    if (e.type === 'tool/call' && typeof e.data.providerCallId === 'string')
      renamed.set(e.data.callId, e.data.providerCallId)
  const back = (id: string) => renamed.get(id) ?? id
  const old = events.map((e) => {
    const data = structuredClone(e.data)
    if (e.type === 'assistant/chunk' && data.chunk.kind === 'tool-call-start')
      data.chunk.callId = back(data.chunk.callId)
    if (e.type === 'assistant/message')
      for (const b of data.message.content) if (b.type === 'tool-call') b.callId = back(b.callId)
    if (e.type === 'tool/call') {
      data.callId = back(data.callId)
      delete data.providerCallId
    }
    if (e.type === 'tool/result') data.message.callId = back(data.message.callId)
    return { event: { ...(e as object), data } as never }
  })
  const id = randomUUID()
  const dir = join(home, 'sessions', cwdKey(cwd), id)
  mkdirSync(dir, { recursive: true })
  writeFileSync(
    join(dir, 'header.json'),
    JSON.stringify({ version: 1, id, cwd, createdAt: Date.now(), origin: 'acp' }, null, 2) + '\n',
  )
  writeFileSync(join(dir, 'session.jsonl'), encodeLines(old))
  writeFileSync(join(dir, 'log.created'), 'session.jsonl')
  return id
}

/** The ids of every session stored under `home` (directories holding a `header.json`). */
export function storedSessionIds(home: string): string[] {
  const root = join(home, 'sessions')
  const ids: string[] = []
  if (!existsSync(root)) return ids
  for (const key of readdirSync(root, { withFileTypes: true })) {
    if (!key.isDirectory()) continue
    for (const entry of readdirSync(join(root, key.name), { withFileTypes: true })) {
      if (entry.isDirectory() && existsSync(join(root, key.name, entry.name, 'header.json'))) ids.push(entry.name)
    }
  }
  return ids
}

async function readLogOnce(home: string, sessionId: string): Promise<LogEvent[]> {
  const root = join(home, 'sessions')
  for (const key of readdirSync(root)) {
    const dir = join(root, key, sessionId)
    if (!existsSync(join(dir, 'header.json'))) continue
    if (!existsSync(dir)) continue
    const raw = join(dir, 'session.jsonl')
    if (existsSync(raw)) return scanRaw(readFileSync(raw)).records.map((r) => r.event)
    const zst = join(dir, 'session.jsonl.zstd')
    if (existsSync(zst)) return scanZstd(readFileSync(zst), await loadZstd()).records.map((r) => r.event)
  }
  throw new Error(`no stored log for session ${sessionId} under ${root}`)
}

// ---- ACP ----

/** How a call whose arguments did not parse shows in ACP (no `rawInput.command`). */
export const UNPARSED_CALL = '<call>'

export interface AcpPeer {
  agent: acp.ClientContext
  updates: acp.SessionNotification[]
  permissions: number
  stderr(): string
  close(): Promise<void>
}

export async function startAcpPeer(env: Record<string, string>, cwd: string, args: string[] = []): Promise<AcpPeer> {
  const child = spawn(process.execPath, [ACP_BIN, ...args], {
    cwd,
    env: { ...inheritedEnv(), HOME: env.HOME ?? process.env.HOME, ...env },
    stdio: ['pipe', 'pipe', 'pipe'],
  })
  let err = ''
  child.stderr.on('data', (d: Buffer) => (err += d.toString('utf8')))
  const exited = new Promise<void>((resolve) => child.on('close', () => resolve()))
  const readable = new ReadableStream<Uint8Array>({
    start(controller) {
      child.stdout.on('data', (d: Buffer) => controller.enqueue(new Uint8Array(d)))
      child.stdout.on('end', () => controller.close())
    },
  })
  const peer = { updates: [] as acp.SessionNotification[], permissions: 0 } as AcpPeer
  const app = acp
    .client({ name: 'session-generator' })
    .onNotification('session/update', ({ params }) => void peer.updates.push(params))
    .onRequest('session/request_permission', ({ params }) => {
      peer.permissions++
      const allow = params.options.find((o) => o.kind === 'allow_once') ?? params.options[0]
      return { outcome: { outcome: 'selected', optionId: allow.optionId } }
    })
  const conn = app.connect(acp.ndJsonStream(Writable.toWeb(child.stdin) as WritableStream<Uint8Array>, readable))
  peer.agent = conn.agent
  peer.stderr = () => err
  peer.close = async () => {
    child.stdin.end()
    const timer = setTimeout(() => child.kill('SIGKILL'), 10_000)
    await exited
    clearTimeout(timer)
    conn.close()
  }
  await conn.agent.request('initialize', {
    protocolVersion: acp.PROTOCOL_VERSION,
    clientCapabilities: {},
    clientInfo: { name: 'gen', version: '0' },
  })
  return peer
}

/**
 * What the ACP stream of one session shows, as markers in order: consecutive chunks of one kind
 * are joined first (a message may arrive in many chunks). A call shows its `rawInput.command`
 * (or its title); its result its last update's text content. Also returns the tool call ids in
 * order and a list of problems (an update for an unknown id, a call updated after it finished).
 */
export function acpMarkers(
  updates: readonly acp.SessionNotification[],
  sessionId: string,
  tag: string,
  options: { thoughtAs?: string } = {},
): { markers: string[]; toolCallIds: string[]; problems: string[] } {
  const markers: string[] = []
  const toolCallIds: string[] = []
  const problems: string[] = []
  const finished = new Set<string>()
  let run: { kind: string; text: string } | undefined
  const flush = () => {
    if (!run) return
    if (run.kind === 'agent_thought_chunk' && options.thoughtAs) markers.push(options.thoughtAs)
    else markers.push(...markersIn(run.text, tag))
    run = undefined
  }
  for (const n of updates) {
    if (n.sessionId !== sessionId) continue
    const u = n.update as { sessionUpdate: string; [k: string]: any } // eslint-disable-line @typescript-eslint/no-explicit-any -- a union read field by field
    if (
      u.sessionUpdate === 'agent_message_chunk' ||
      u.sessionUpdate === 'agent_thought_chunk' ||
      u.sessionUpdate === 'user_message_chunk'
    ) {
      const text = u.content?.type === 'text' ? String(u.content.text) : ''
      if (run && run.kind !== u.sessionUpdate) flush()
      run ??= { kind: u.sessionUpdate, text: '' }
      run.text += text
      continue
    }
    flush()
    if (u.sessionUpdate === 'tool_call') {
      if (toolCallIds.includes(u.toolCallId)) problems.push(`tool_call ${u.toolCallId} announced twice`)
      toolCallIds.push(u.toolCallId)
      const input = u.rawInput as { command?: unknown } | undefined
      if (typeof input?.command === 'string')
        markers.push(
          ...markersIn(input.command, tag)
            .filter((m) => !m.endsWith('x42'))
            .slice(0, 1),
        )
      else markers.push(UNPARSED_CALL)
    } else if (u.sessionUpdate === 'tool_call_update') {
      if (!toolCallIds.includes(u.toolCallId)) problems.push(`tool_call_update for unknown ${u.toolCallId}`)
      if (finished.has(u.toolCallId)) problems.push(`tool_call_update for ${u.toolCallId} after it finished`)
      if (u.status === 'completed' || u.status === 'failed') {
        finished.add(u.toolCallId)
        const text = JSON.stringify(u.content ?? [])
        if (u.status === 'completed')
          markers.push(
            ...markersIn(text, tag)
              .filter((m) => m.endsWith('x42'))
              .slice(0, 1),
          )
      }
    }
  }
  flush()
  return { markers, toolCallIds, problems }
}

// ---- TUI ----

export interface TuiScreen {
  lines: string[]
}

/**
 * Starts `dsh` (profile tui) with `args` in a PTY tall enough for the whole transcript, waits until
 * `ready(screen)` holds and the screen has stopped changing, and returns every buffer line.
 */
export async function tuiScreen(
  args: string[],
  env: Record<string, string>,
  cwd: string,
  ready: (text: string) => boolean,
  drive?: (input: (data: string) => void, text: () => string) => Promise<void>,
): Promise<TuiScreen> {
  const cols = 160
  const rows = 200
  const term = pty.spawn(process.execPath, [DSH_BIN, '--profile', 'tui', ...args], {
    name: 'xterm-256color',
    cols,
    rows,
    cwd,
    env: { ...compileCache(), PATH: process.env.PATH ?? '', TERM: 'xterm-256color', ...env },
  })
  const exited = new Promise<void>((resolve) => term.onExit(() => resolve()))
  const screen = new xterm.Terminal({ cols, rows, scrollback: 5000, allowProposedApi: true })
  let pending = Promise.resolve()
  term.onData((data) => {
    pending = pending.then(() => new Promise<void>((r) => screen.write(data, r)))
  })
  const text = () => {
    const buffer = screen.buffer.active
    const out: string[] = []
    for (let i = 0; i < buffer.length; i++) out.push(buffer.getLine(i)?.translateToString(true) ?? '')
    return out.join('\n')
  }
  try {
    if (drive) await drive((d) => term.write(d), text)
    const deadline = Date.now() + 30_000
    let last = ''
    let stable = 0
    for (;;) {
      await pending
      const now = text()
      if (ready(now)) {
        stable = now === last ? stable + 1 : 0
        if (stable >= 2) return { lines: now.split('\n') }
      }
      if (Date.now() > deadline)
        throw new Error(
          `the TUI did not show the expected screen; it shows:\n${now
            .split('\n')
            .filter((l) => l.trim() !== '')
            .join('\n')}`,
        )
      last = now
      await new Promise((r) => setTimeout(r, 150))
    }
  } finally {
    // Wait for the exit: a dsh still closing its session must not race the caller's cleanup.
    term.kill()
    const timer = setTimeout(() => term.kill('SIGKILL'), 10_000)
    await exited
    clearTimeout(timer)
    screen.dispose()
  }
}

/** Waits until `cond(text())` holds (the TUI screen, polled). */
export async function untilScreen(
  text: () => string,
  cond: (t: string) => boolean,
  what: string,
  ms = 30_000,
): Promise<void> {
  const deadline = Date.now() + ms
  while (!cond(text())) {
    if (Date.now() > deadline)
      throw new Error(
        `the TUI never showed ${what}; it shows:\n${text()
          .split('\n')
          .filter((l) => l.trim() !== '')
          .join('\n')}`,
      )
    await new Promise((r) => setTimeout(r, 100))
  }
}

/**
 * Answers the TUI's approval panel (`Allow this action?`) with `y` (allow once), once per request:
 * the request is told by the panel's first lines (the call's title carries its marker). Call it
 * with every screen read while a turn runs.
 */
export function approvalAnswerer(input: (data: string) => void): ((screen: string) => void) & { allowed: number } {
  let answered: string | undefined
  const answer = (screen: string) => {
    const lines = screen.split('\n')
    const at = lines.findLastIndex((l) => l.includes('Allow this action?'))
    if (at < 0) {
      answered = undefined
      return
    }
    const request = lines
      .slice(at + 1, at + 4)
      .join('\n')
      .trim()
    if (request === answered) return
    answered = request
    answer.allowed++
    input('y')
  }
  answer.allowed = 0
  return answer
}

/** Markers of the TUI screen in order; a reasoning row (`✻ Thought`/`✻ Thinking…`) as `thoughtAs`. */
export function tuiMarkers(lines: readonly string[], tag: string, thoughtAs: string): string[] {
  const out: string[] = []
  for (const line of lines) {
    if (/✻ (Thought|Thinking…)/.test(line)) out.push(thoughtAs)
    for (const m of markersIn(line, tag)) out.push(m)
  }
  return dedupeAdjacent(out)
}

// ---- web ----

/** Markers of the chat's nodes in order (a thinking node as `thoughtAs`). */
export async function webMarkers(page: Page, tag: string, thoughtAs: string): Promise<string[]> {
  // Text nodes, not innerText: rows off screen are skipped by `content-visibility: auto`, and
  // innerText leaves out what is not laid out. One line per text node keeps markers apart.
  const nodes = await page.locator('.dsh-chat [data-node]').evaluateAll((els) =>
    els.map((el) => {
      const parts: string[] = []
      // Runs in the page; typed structurally (this package compiles without the DOM library).
      type Text = { nodeType: number; nodeValue: string | null; childNodes: ArrayLike<unknown> }
      const walk = (node: Text): void => {
        if (node.nodeType === 3) parts.push(node.nodeValue ?? '')
        for (const child of Array.from(node.childNodes)) walk(child as Text)
      }
      walk(el as unknown as Text)
      return { kind: el.getAttribute('data-node') ?? '', text: parts.join('\n') }
    }),
  )
  const out: string[] = []
  for (const node of nodes) {
    if (node.kind === 'thinking') out.push(thoughtAs)
    else out.push(...markersIn(node.text, tag))
  }
  return dedupeAdjacent(out)
}

/** A marker shown on several adjacent lines (a long card, a title and a subject) counts once. */
function dedupeAdjacent(list: string[]): string[] {
  return list.filter((m, i) => m !== list[i - 1] || m.startsWith('<'))
}
