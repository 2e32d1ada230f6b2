// `ctx.remote`: typed calls of the host's methods (`POST /api/<method>` with a JSON body of
// params, answered `{result}` or `{error: {code, message, field?}}`). Contracts come from
// @dsh/web-protocol and from domain packages' `./contract` exports; a call by contract object or by
// a name listed in `RemoteMethods` is typed end to end.
import { type Context, Service } from 'cordis'
import { methodPath, type MethodContract, type ParamsOf, type ResultOf } from '@dsh/web-protocol'
import type * as P from '@dsh/web-protocol'

/**
 * Method names with their contracts, for calls by name. Domain packages add theirs:
 * `declare module '@dsh/client-runtime' { interface RemoteMethods { 'workspaces.list': typeof workspacesList } }`.
 */
export interface RemoteMethods {
  'sessions.list': typeof P.sessionsList
  'sessions.create': typeof P.sessionsCreate
  'sessions.history': typeof P.sessionsHistory
  'sessions.prompt': typeof P.sessionsPrompt
  'sessions.cancel': typeof P.sessionsCancel
  'sessions.rename': typeof P.sessionsRename
  'sessions.archive': typeof P.sessionsArchive
  'sessions.setModel': typeof P.sessionsSetModel
  'sessions.setPermissionMode': typeof P.sessionsSetPermissionMode
  'sessions.fork': typeof P.sessionsFork
  'approvals.respond': typeof P.approvalsRespond
  'questions.respond': typeof P.questionsRespond
  'llm.providers': typeof P.llmProviders
  'llm.models': typeof P.llmModels
  'commands.list': typeof P.commandsList
  'commands.execute': typeof P.commandsExecute
}

/**
 * What a caller sends. Contracts carry only the validated (output) type, where defaulted fields
 * are present, so every top-level field is optional here; the host checks required ones.
 */
export type InputOf<C> = Partial<ParamsOf<C>>

export interface CallOptions {
  signal?: AbortSignal
}

/** A failed call: the host's error code and message, or `NETWORK` when the host could not be reached. */
export class RemoteError extends Error {
  override name = 'RemoteError'
  constructor(
    readonly code: string,
    message: string,
    readonly status = 0,
    readonly field?: string,
  ) {
    super(message)
  }
}

export interface RemoteConfig {
  /** Prefix of every request (empty: same origin). */
  baseUrl?: string
  fetch?: typeof fetch
}

export class Remote extends Service {
  private readonly base: string
  private readonly fetcher: typeof fetch
  /** Called with every network failure (the connection marks the host unreachable). */
  private readonly failureListeners = new Set<(error: RemoteError) => void>()

  constructor(ctx: Context, config: RemoteConfig = {}) {
    super(ctx, 'remote')
    this.base = config.baseUrl ?? ''
    this.fetcher = config.fetch ?? ((input, init) => fetch(input, init))
  }

  /** Calls a method by contract (typed by it) or by a name of `RemoteMethods`. */
  call<C extends MethodContract<any, any>>(contract: C, params: InputOf<C>, options?: CallOptions): Promise<ResultOf<C>>
  call<K extends keyof RemoteMethods>(
    name: K,
    params: InputOf<RemoteMethods[K]>,
    options?: CallOptions,
  ): Promise<ResultOf<RemoteMethods[K]>>
  call(name: string, params: unknown, options?: CallOptions): Promise<unknown>
  async call(target: string | MethodContract<any, any>, params: unknown, options: CallOptions = {}): Promise<unknown> {
    const name = typeof target === 'string' ? target : target.name
    let response: Response
    try {
      response = await this.fetcher(this.base + methodPath(name), {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(params ?? {}),
        credentials: 'same-origin',
        signal: options.signal,
      })
    } catch (error) {
      if (options.signal?.aborted) throw error
      const failure = new RemoteError('NETWORK', `${name}: the host could not be reached (${(error as Error).message})`)
      for (const listener of [...this.failureListeners]) listener(failure)
      throw failure
    }
    let body: any
    try {
      body = await response.json()
    } catch {
      throw new RemoteError(
        'BAD_RESPONSE',
        `${name}: the host answered ${response.status} without a JSON body`,
        response.status,
      )
    }
    if (!response.ok || !body || typeof body !== 'object' || !('result' in body)) {
      const error = body?.error
      if (error && typeof error.code === 'string')
        throw new RemoteError(error.code, String(error.message ?? error.code), response.status, error.field)
      throw new RemoteError(
        'BAD_RESPONSE',
        `${name}: the host answered ${response.status} with no result`,
        response.status,
      )
    }
    return body.result
  }

  /** Listens to network failures of calls (used by the connection for its online state). */
  onFailure(listener: (error: RemoteError) => void): () => void {
    this.failureListeners.add(listener)
    return () => void this.failureListeners.delete(listener)
  }

  /** The URL of a path on the host (for streams and plugin files). */
  url(path: string): string {
    return this.base + path
  }
}
