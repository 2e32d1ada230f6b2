// The envd and HTTP helpers of the stand-in: a process's event stream as Connect-RPC messages, a
// sandbox path as a filesystem entry, filesystem errors as Connect codes, and the plain JSON and
// body helpers of the REST side.
import { promises as fsp, type Stats } from 'node:fs'
import type { IncomingMessage, ServerResponse } from 'node:http'
import { basename } from 'node:path'
import { Code, ConnectError, type HandlerContext } from '@connectrpc/connect'
import { timestampFromMs } from '@bufbuild/protobuf/wkt'
import type { ProcessEvent, SandboxProcess, StandinSandbox } from './sandbox.ts'

/**
 * Streams a process's events until it ends, the client goes away, or the sandbox stops.
 * `afterFirstData` runs once the first output message was handed over (a scripted stream drop).
 */
export async function* follow(
  sandbox: StandinSandbox,
  proc: SandboxProcess,
  context: HandlerContext,
  afterFirstData?: () => void,
) {
  const queue: ProcessEvent[] = []
  let wake: (() => void) | undefined
  const push = (event: ProcessEvent) => {
    queue.push(event)
    wake?.()
  }
  proc.listeners.add(push)
  const lifetime = sandbox.lifetime.signal
  const onStop = () => wake?.()
  lifetime.addEventListener('abort', onStop)
  context.signal.addEventListener('abort', onStop)
  try {
    yield { event: { event: { case: 'start' as const, value: { pid: proc.pid } } } }
    if (proc.ended) queue.push(proc.ended)
    for (;;) {
      while (queue.length === 0) {
        if (lifetime.aborted)
          throw new ConnectError(`sandbox ${sandbox.record.id} is not running anymore`, Code.Unavailable)
        if (context.signal.aborted) return
        await new Promise<void>((resolve) => (wake = resolve))
        wake = undefined
      }
      const event = queue.shift() as ProcessEvent
      if (event.kind === 'data') {
        yield {
          event: { event: { case: 'data' as const, value: { output: { case: event.stream, value: event.data } } } },
        }
        afterFirstData?.()
        afterFirstData = undefined
      } else {
        yield {
          event: {
            event: {
              case: 'end' as const,
              value: {
                exitCode: event.exitCode,
                exited: event.exited,
                status: event.status,
                ...(event.error ? { error: event.error } : {}),
              },
            },
          },
        }
        return
      }
    }
  } finally {
    proc.listeners.delete(push)
    lifetime.removeEventListener('abort', onStop)
    context.signal.removeEventListener('abort', onStop)
  }
}

export const toEntry = async (sandbox: StandinSandbox, path: string, host: string, stat: Stats) => {
  const link = stat.isSymbolicLink() ? await fsp.readlink(host).catch(() => undefined) : undefined
  let target = stat
  if (link !== undefined) target = await fsp.stat(sandbox.hostPath(path)).catch(() => stat)
  const type = target.isFile() ? 1 : target.isDirectory() ? 2 : 0
  return {
    name: basename(path),
    type,
    path,
    size: BigInt(target.size),
    mode: target.mode & 0o777,
    permissions: permissions(target),
    owner: 'user',
    group: 'user',
    modifiedTime: timestampFromMs(Math.floor(target.mtimeMs)),
    ...(link !== undefined ? { symlinkTarget: link } : {}),
  }
}
export const fsError = (error: unknown, path: string): ConnectError => {
  const code = (error as NodeJS.ErrnoException).code
  if (code === 'ENOENT') return new ConnectError(`path not found: ${path}`, Code.NotFound)
  if (code === 'EEXIST') return new ConnectError(`path already exists: ${path}`, Code.AlreadyExists)
  if (code === 'ENOTDIR' || code === 'EISDIR' || code === 'ENOTEMPTY')
    return new ConnectError(`${code}: ${path}`, Code.InvalidArgument)
  if (code === 'EACCES' || code === 'EPERM')
    return new ConnectError(`permission denied: ${path}`, Code.PermissionDenied)
  return new ConnectError(`${(error as Error).message}`, Code.Internal)
}

export function json(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body)
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(text)) })
  res.end(text)
}

export function collect(req: IncomingMessage): Promise<Buffer[]> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = []
    req.on('data', (chunk: Buffer) => chunks.push(chunk))
    req.on('end', () => resolve(chunks))
    req.on('error', reject)
  })
}

export function parseJson(text: string): Record<string, unknown> | undefined {
  if (!text) return undefined
  try {
    const value = JSON.parse(text) as unknown
    return isRecord(value) ? value : undefined
  } catch {
    return undefined
  }
}

export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

export function permissions(stat: Stats): string {
  const kind = stat.isDirectory() ? 'd' : stat.isSymbolicLink() ? 'L' : '-'
  const bits = 'rwxrwxrwx'
  let out = kind
  for (let i = 0; i < 9; i++) out += stat.mode & (1 << (8 - i)) ? bits[i] : '-'
  return out
}
