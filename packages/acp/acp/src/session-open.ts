// Request checks and answers of the session methods that need no server state: the `cwd` check of
// `session/new` and `session/load`, the error `session/load` gives for a session the surface kit
// could not open, and the rows of `session/list`.
import { statSync } from 'node:fs'
import { isAbsolute, resolve } from 'node:path'
import * as acp from '@agentclientprotocol/sdk'
import type { SessionSummary } from '@dsh/session-persistence'
import type { SessionOpenError } from '@dsh/surface-kit'

/** An absolute path of an existing directory, normalised; else an invalid-params error naming it. */
export function checkCwd(cwd: string): string {
  if (typeof cwd !== 'string' || !isAbsolute(cwd)) {
    throw acp.RequestError.invalidParams({ cwd }, `cwd must be an absolute path, got ${JSON.stringify(cwd)}`)
  }
  let isDir = false
  try {
    isDir = statSync(cwd).isDirectory()
  } catch {}
  if (!isDir) throw acp.RequestError.invalidParams({ cwd }, `cwd ${cwd} is not an existing directory`)
  return resolve(cwd)
}

/** `session/load`'s error for a session the kit could not open. */
export function loadError(error: SessionOpenError): acp.RequestError {
  const { sessionId } = error
  switch (error.code) {
    case 'NO_PERSISTENCE':
      return acp.RequestError.methodNotFound('session/load')
    case 'NOT_FOUND':
      return acp.RequestError.sessionNotFound(sessionId)
    case 'BAD_ID':
      return acp.RequestError.invalidParams({ sessionId }, `cannot load session: ${error.detail}`)
    default:
      return acp.RequestError.invalidRequest(
        { sessionId, code: error.storeCode },
        `cannot load session ${sessionId}: ${error.detail}`,
      )
  }
}

/** `session/list`'s rows: the stored sessions, of one cwd when the client names one. */
export function listRows(
  rows: readonly SessionSummary[],
  cwd: string | null | undefined,
): acp.ListSessionsResponse['sessions'] {
  return rows
    .filter((r) => !cwd || r.cwd === cwd)
    .map((r) => ({
      sessionId: r.id,
      cwd: r.cwd,
      title: r.title ?? r.firstPrompt ?? null,
      updatedAt: new Date(r.updatedAt).toISOString(),
    }))
}
