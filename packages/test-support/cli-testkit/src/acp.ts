// @dsh/cli-testkit/acp: drives the real `dsh-acp` bin in a subprocess with the ACP SDK's client side over its stdio.
// Every stdout byte is also kept raw, so tests can check that nothing but frames was printed.
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process'
import { mkdtempSync, realpathSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Writable } from 'node:stream'
import { fileURLToPath } from 'node:url'
import * as acp from '@agentclientprotocol/sdk'
import { inheritedEnv } from '@dsh/cli-testkit'

export const bin = fileURLToPath(new URL('../../../acp/acp-app/bin/dsh-acp.mjs', import.meta.url))

export interface Workspace {
  root: string
  home: string
  cwd: string
}

export function workspace(): Workspace {
  const root = realpathSync(mkdtempSync(join(tmpdir(), 'dsh-acp-')))
  return { root, home: join(root, 'home'), cwd: root }
}

export type PermissionHandler = (
  request: acp.RequestPermissionRequest,
) => acp.RequestPermissionResponse | Promise<acp.RequestPermissionResponse>

export interface Spawned {
  child: ChildProcessWithoutNullStreams
  stdoutLines(): string[]
  stderr(): string
  exited: Promise<number | null>
}

export function spawnBin(
  args: string[],
  env: Record<string, string | undefined>,
  cwd: string,
  binPath: string = bin,
): Spawned {
  const child = spawn(process.execPath, [binPath, ...args], {
    cwd,
    env: { ...inheritedEnv(), ...env },
    stdio: ['pipe', 'pipe', 'pipe'],
  })
  let out = ''
  let err = ''
  child.stdout.on('data', (d: Buffer) => (out += d.toString('utf8')))
  child.stderr.on('data', (d: Buffer) => (err += d.toString('utf8')))
  const exited = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)))
  return {
    child,
    stdoutLines: () => out.split('\n').filter((l) => l !== ''),
    stderr: () => err,
    exited,
  }
}

export interface AcpProcess extends Spawned {
  agent: acp.ClientContext
  updates: acp.SessionNotification[]
  permissions: acp.RequestPermissionRequest[]
  onPermission: PermissionHandler
  /** Serves `fs/read_text_file` / `fs/write_text_file` (advertise them in initialize). */
  exposeFs(fs: { read(path: string): string; write(path: string, content: string): void }): Promise<void>
  /** Resolves once an update matching `pred` has arrived (already or later). */
  waitFor(pred: (n: acp.SessionNotification) => boolean): Promise<acp.SessionNotification>
  /** Closes stdin and waits for the exit status. */
  close(): Promise<number | null>
}

export async function startAcp(
  env: Record<string, string | undefined>,
  cwd: string,
  args: string[] = [],
  /** Another launcher of the same server, e.g. `dsh.mjs` with `acp` as the first argument. */
  binPath: string = bin,
): Promise<AcpProcess> {
  const spawned = spawnBin(args, env, cwd, binPath)
  const { child } = spawned
  // A tee of the child's stdout into the SDK: the raw text is kept by spawnBin's listener.
  const readable = new ReadableStream<Uint8Array>({
    start(controller) {
      child.stdout.on('data', (d: Buffer) => controller.enqueue(new Uint8Array(d)))
      child.stdout.on('end', () => controller.close())
    },
  })
  const writable = Writable.toWeb(child.stdin) as WritableStream<Uint8Array>
  const updates: acp.SessionNotification[] = []
  const permissions: acp.RequestPermissionRequest[] = []
  const waiters: { pred: (n: acp.SessionNotification) => boolean; resolve: (n: acp.SessionNotification) => void }[] = []
  const proc = {} as AcpProcess
  proc.onPermission = () => ({ outcome: { outcome: 'cancelled' } })
  let fsImpl: { read(path: string): string; write(path: string, content: string): void } | undefined
  const noFs = () => {
    throw new Error('this test client does not serve fs requests')
  }
  const app = acp
    .client({ name: 'dsh-acp-test' })
    .onNotification('session/update', ({ params }) => {
      updates.push(params)
      for (const w of [...waiters]) {
        if (w.pred(params)) {
          waiters.splice(waiters.indexOf(w), 1)
          w.resolve(params)
        }
      }
    })
    .onRequest('session/request_permission', ({ params }) => {
      permissions.push(params)
      return proc.onPermission(params)
    })
    .onRequest('fs/read_text_file', ({ params }) => ({ content: (fsImpl ?? { read: noFs }).read(params.path) }))
    .onRequest('fs/write_text_file', ({ params }) => {
      ;(fsImpl ?? { write: noFs }).write(params.path, params.content)
      return {}
    })
  const conn = app.connect(acp.ndJsonStream(writable, readable))
  Object.assign(proc, spawned, {
    agent: conn.agent,
    updates,
    permissions,
    async exposeFs(impl: typeof fsImpl) {
      fsImpl = impl
    },
    waitFor(pred: (n: acp.SessionNotification) => boolean) {
      const found = updates.find(pred)
      if (found) return Promise.resolve(found)
      return new Promise<acp.SessionNotification>((resolve) => waiters.push({ pred, resolve }))
    },
    async close() {
      child.stdin.end()
      const code = await spawned.exited
      conn.close()
      return code
    },
  })
  return proc
}

export async function initialize(
  agent: acp.ClientContext,
  capabilities: acp.ClientCapabilities = {},
): Promise<acp.InitializeResponse> {
  return agent.request('initialize', {
    protocolVersion: acp.PROTOCOL_VERSION,
    clientCapabilities: capabilities,
    clientInfo: { name: 'test', version: '0' },
  })
}

/** Every stdout line is one JSON-RPC 2.0 message. */
export function assertOnlyFrames(lines: string[]): void {
  for (const line of lines) {
    let msg: { jsonrpc?: string }
    try {
      msg = JSON.parse(line)
    } catch {
      throw new Error(`stdout carried a line that is not JSON: ${JSON.stringify(line.slice(0, 200))}`)
    }
    if (msg.jsonrpc !== '2.0') throw new Error(`stdout carried a non-JSON-RPC line: ${line.slice(0, 200)}`)
  }
}

/** Stable form of an update stream: ids, the workspace path and volatile fields replaced. */
export function normalise(updates: acp.SessionNotification[], cwd: string): unknown[] {
  const ids = new Map<string, string>()
  const idOf = (id: string) => {
    if (!ids.has(id)) ids.set(id, `call-${ids.size + 1}`)
    return ids.get(id)!
  }
  const walk = (value: unknown): unknown => {
    if (typeof value === 'string') return value.split(cwd).join('<cwd>')
    if (Array.isArray(value)) return value.map(walk)
    if (value && typeof value === 'object') {
      const out: Record<string, unknown> = {}
      for (const [k, v] of Object.entries(value)) {
        out[k] = k === 'toolCallId' && typeof v === 'string' ? idOf(v) : walk(v)
      }
      return out
    }
    return value
  }
  return updates.map((n) => walk(n.update))
}
