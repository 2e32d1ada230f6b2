// What the server adds around a tool call of one of its sessions: the call marked in progress and
// recorded as running (so a permission request is attributed to it), full-text diffs captured
// around `edit`/`write`, and file access routed through the client when it offers it.
import { readFile, stat } from 'node:fs/promises'
import { resolve } from 'node:path'
import type { Context } from 'cordis'
import type {} from '@dsh/fs'
import type { ExecutePayload, ToolOutput } from '@dsh/tools'
import { type ClientFsRoute, clientFsRoute } from './client-route.ts'
import { type LiveSession, send } from './live.ts'

export interface ToolCallOptions {
  captureDiffs: boolean
  maxDiffBytes: number
  clientFsTools: string[]
}

/** Runs `body` with `callId` recorded as running in `live` (for permission attribution). */
export async function tracking<T>(live: LiveSession | undefined, callId: string, body: () => Promise<T>): Promise<T> {
  if (!live) return body()
  live.running.push(callId)
  try {
    return await body()
  } finally {
    live.running.splice(live.running.lastIndexOf(callId), 1)
  }
}

/**
 * A file's text for a diff, through `ctx.fs` when mounted: `{exists: false}` when it does not
 * exist, undefined when it is larger than `maxDiffBytes` or cannot be read.
 */
export async function readForDiff(
  ctx: Context,
  path: string,
  maxDiffBytes: number,
): Promise<{ exists: false } | { exists: true; text: string } | undefined> {
  const fs = ctx.get('fs')
  try {
    const size = fs ? (await fs.stat(path)).size : (await stat(path)).size
    if (size > maxDiffBytes) return undefined
    return { exists: true, text: fs ? (await fs.readText(path)).text : await readFile(path, 'utf8') }
  } catch (error) {
    return (error as { code?: string }).code === 'NOT_FOUND' || (error as { code?: string }).code === 'ENOENT'
      ? { exists: false }
      : undefined
  }
}

/** Client file access for one tool call, when the client advertised it and the tool is a text file tool. */
export function clientRoute(live: LiveSession, tool: string, clientFsTools: string[]): ClientFsRoute | undefined {
  const fs = live.connection.capabilities.fs
  const client = live.connection.client
  if (!client || !fs || !clientFsTools.includes(tool)) return undefined
  const route: ClientFsRoute = {}
  if (fs.readTextFile) {
    route.read = async (path) => (await client.request('fs/read_text_file', { sessionId: live.id, path })).content
  }
  if (fs.writeTextFile) {
    route.write = async (path, content) => {
      await client.request('fs/write_text_file', { sessionId: live.id, path, content })
    }
  }
  return route.read || route.write ? route : undefined
}

/** `tools/execute` listener body: marks the call in progress and captures full-text diffs of file edits. */
export async function aroundTool(
  ctx: Context,
  live: LiveSession | undefined,
  options: ToolCallOptions,
  payload: ExecutePayload,
  next: () => Promise<ToolOutput>,
): Promise<ToolOutput> {
  if (!live) return next()
  const { callId, name } = payload.call
  send(live, { sessionUpdate: 'tool_call_update', toolCallId: callId, status: 'in_progress' })
  const args = (payload.args ?? {}) as { file_path?: unknown }
  const file = typeof args.file_path === 'string' ? resolve(payload.context.cwd, args.file_path) : undefined
  const capture = options.captureDiffs && file && (name === 'edit' || name === 'write')
  const body = () =>
    tracking(live, callId, async () => {
      const before = capture ? await readForDiff(ctx, file, options.maxDiffBytes) : undefined
      const output = await next()
      if (before && file && !output.isError && !output.error) {
        const after = await readForDiff(ctx, file, options.maxDiffBytes)
        if (after?.exists)
          live.translator.captureDiff(callId, {
            path: file,
            oldText: before.exists ? before.text : null,
            newText: after.text,
          })
      }
      return output
    })
  const route = clientRoute(live, name, options.clientFsTools)
  return route ? clientFsRoute.run(route, body) : body()
}
