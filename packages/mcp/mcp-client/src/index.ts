// @dsh/mcp-client: connects to Model Context Protocol servers and offers their tools to the model
// as `mcp__<server>__<tool>`. Servers come from this row's `servers`, the project's `.mcp.json`
// and the `mcpServers` settings namespace (in that order of precedence), in the `mcpServers`
// shape other agents use. `ctx.mcp` lists them with their state and mounts per-session servers.
// The project's `.mcp.json` is the project's, not the user's: its servers start only through
// `ctx.projectTrust` (consent per directory and content), never without it.
import { type Context, Service } from 'cordis'
import type {} from '@dsh/session-persistence'
import type {} from '@dsh/settings'
import type {} from '@dsh/agent'
import type {} from '@dsh/subprocess'
import type { CommandRegistry } from '@dsh/commands'
import type {} from '@dsh/tools'
import type { ProjectTrust } from '@dsh/project-trust'
import type {} from '@dsh/credentials'
import type { UserQuestionsService } from '@dsh/user-questions'
import type { ElicitRequestFormParams, ElicitRequestURLParams, ElicitResult } from '@modelcontextprotocol/sdk/types.js'
import { type AuthStore, layeredStore, openInBrowser, SignIns } from '@dsh/mcp-oauth'
import { answerElicitation } from './elicitation.ts'
import { checkServer, checkTable, serverFileDigests, type CheckedServer } from './config.ts'
import { McpServerConnection, type McpServerStatus } from './server.ts'
import { fromAcpServer } from './acp.ts'
import { promptCommand, promptCommandName } from './prompts.ts'
import { resourceCandidates } from './mentions.ts'
import { McpClientConfigSchema, type AddServerOptions, type McpClientConfig } from './client-config.ts'
import { appendProgress, logNotices, logServerMessage, staticStatus } from './notices.ts'
import { projectRequest } from './project.ts'
import { recallOnResume, sessionSubscriptions } from './subscriptions.ts'
import { registerWebApi } from './web-api.ts'

export type { McpServerState, McpServerStatus, RetryOptions } from './server.ts'
export type { AddServerOptions, McpClientConfig } from './client-config.ts'
export type { McpProgress, McpStatusNotice, ResourceUpdatedNotice, ToolProgress } from './notices.ts'
export type { CheckedServer, McpSource, McpTransportKind, OAuthSettings, ServerSpec } from './config.ts'
export { McpAuthError, storeKey } from '@dsh/mcp-oauth'
export { elicitationQuestions, elicitationResult } from './elicitation.ts'
export { checkServer, checkTable, commandLine, expandVariables, projectTrustItems, readProjectFile } from './config.ts'
export { projectTrustRequests, TRUST_SOURCE } from './project.ts'
export { toolName } from './names.ts'
export { fromAcpServer } from './acp.ts'
export { mapResult } from './results.ts'
export { promptArguments, promptCommandName, promptText, promptUsage, splitWords } from './prompts.ts'
export { MENTION_SOURCE, mentionedResources, renderResource, type ResourceCandidate } from './mentions.ts'

export class McpClient extends Service {
  static inject = ['tools', 'subprocess']
  static Config = McpClientConfigSchema

  private readonly servers = new Map<string, McpServerConnection | CheckedServer>()
  /** Project servers waiting for the user's trust (listed as disabled until then), and why. */
  private readonly held = new Map<string, CheckedServer>()
  private readonly heldReason = new Map<string, string>()
  /** Started project servers: the digests of the project files each executes, as consented. */
  private readonly pins = new Map<string, { raw: unknown; files: string }>()
  private trust: ProjectTrust | undefined
  private readonly cwd: string
  private questions: UserQuestionsService | undefined
  private credentials: Context['credentials'] | undefined
  private commands: CommandRegistry | undefined
  private sessions: Context['sessions'] | undefined
  /** The slash commands of each server's prompts, by server key, then by command name. */
  private readonly promptCommands = new Map<string, Map<string, { key: string; dispose: () => void }>>()
  /** Sign-ins outside one server: the session with a human, servers waiting for one, `dsh mcp login`. */
  private readonly signIns = new SignIns({
    questions: () => this.questions,
    open: (url) => this.openInBrowser(url),
    waitMs: () => this.config.authWaitMs,
    tell: (line) => process.stderr.write(line),
  })
  private readonly connections = () => [...this.servers.values()].filter((e) => e instanceof McpServerConnection)
  /** Resources mentioned in sessions, subscribed to where the server offers it (subscriptions.ts). */
  private readonly subscriptions = sessionSubscriptions(
    () => this.sessions,
    (message) => this.ctx.logger('mcp').warn(message),
    () => this.config.mentionMaxChars,
  )
  /** OAuth state: the credentials seam (the 0600 credentials file) when mounted, else this process's memory. */
  private readonly authStore: AuthStore = layeredStore(
    () => this.credentials,
    (message) => this.ctx.logger('mcp').warn(message),
  )

  constructor(
    ctx: Context,
    private readonly config: McpClientConfig,
  ) {
    super(ctx, 'mcp')
    this.cwd = config.cwd ?? process.cwd()
    ctx.effect(
      () => () => {
        for (const key of [...this.servers.keys()]) this.remove(key)
      },
      'mcp: close servers',
    )
  }

  async [Service.init](): Promise<void> {
    const ctx = this.ctx
    const env = process.env
    const claimed = new Set<string>()
    const mount = (entries: CheckedServer[]) => {
      for (const entry of entries) {
        if (claimed.has(entry.name)) {
          ctx.logger('mcp').debug('MCP server "%s" from %s is shadowed by an earlier source', entry.name, entry.origin)
          continue
        }
        claimed.add(entry.name)
        this.mountChecked(entry)
      }
    }
    const table = checkTable(this.config.servers, { source: 'config', origin: 'config', cwd: this.cwd, env })
    mount(table.servers)
    if (this.config.projectFile) {
      const project = projectRequest(this.cwd)
      if (project.problem) this.problem(project.problem)
      const checked = checkTable(project.table, { source: 'project', origin: project.path, cwd: this.cwd, env })
      if (checked.problem) this.problem(checked.problem)
      // Entries that start nothing (invalid, disabled) are listed at once; the others wait for
      // consent. Their names are claimed now, so a settings server of the same name stays shadowed.
      mount(checked.servers.filter((entry) => !('spec' in entry)))
      const runnable = checked.servers.filter((entry) => 'spec' in entry && !claimed.has(entry.name))
      for (const entry of runnable) {
        claimed.add(entry.name)
        this.held.set(entry.name, entry)
        const raw = (project.table as Record<string, unknown>)[entry.name]
        this.pins.set(entry.name, { raw, files: digestKey(serverFileDigests(raw, this.cwd)) })
      }
      if (runnable.length > 0) {
        // No project-trust row: the servers stay held (fail closed) and are listed as untrusted.
        ctx.inject(['projectTrust'], (inner) => {
          inner.effect(() => {
            this.trust = inner.projectTrust
            let off: () => void = () => {}
            try {
              off = inner.projectTrust.gate(project.request, () => {
                for (const entry of runnable) {
                  if (this.held.get(entry.name) !== entry) continue
                  this.held.delete(entry.name)
                  this.mountChecked(entry)
                }
              })
            } catch (error) {
              this.problem(`the project's MCP servers were not started: ${(error as Error).message}`)
            }
            return () => {
              off()
              this.trust = undefined
            }
          }, 'mcp: project servers behind project trust')
        })
      }
    }
    if (this.config.userSettings) {
      ctx.inject(['settings'], (inner) => {
        const origin = inner.settings.location
        const checked = checkTable(inner.settings.get('mcpServers'), { source: 'user', origin, cwd: this.cwd, env })
        if (checked.problem) this.problem(checked.problem)
        for (const entry of checked.servers) {
          if (claimed.has(entry.name)) continue
          inner.effect(() => {
            claimed.add(entry.name)
            const key = this.mountChecked(entry)
            return () => {
              claimed.delete(entry.name)
              this.remove(key)
            }
          }, `mcp: server ${entry.name}`)
        }
      })
    }
    ctx.inject(['userQuestions'], (inner) => {
      inner.effect(() => {
        this.questions = inner.userQuestions
        return () => (this.questions = undefined)
      }, 'mcp: user questions')
    })
    ctx.inject(['credentials'], (inner) => {
      inner.effect(() => {
        this.credentials = inner.credentials
        return () => (this.credentials = undefined)
      }, 'mcp: credentials')
    })
    // Logged notices: persistence must know the type, or sessions that have one do not load.
    ctx.inject(['sessionPersistence'], (inner) => {
      inner.sessionPersistence.registerEventType('mcp/status')
      inner.sessionPersistence.registerEventType('tool/progress')
      inner.sessionPersistence.registerEventType('mcp/resource-updated')
    })
    ctx.inject(['commands'], (inner) => {
      inner.effect(() => {
        this.commands = inner.commands
        for (const entry of this.servers.values()) if (entry instanceof McpServerConnection) this.syncPrompts(entry)
        // A command line naming a prompt of a server still connecting waits for it (bounded).
        const stopWaiting = inner.commands.pending(this.ready())
        return () => {
          stopWaiting()
          for (const commands of this.promptCommands.values()) for (const c of commands.values()) c.dispose()
          this.promptCommands.clear()
          this.commands = undefined
        }
      }, 'mcp: prompts as commands')
    })
    ctx.inject(['sessions'], (inner) => {
      inner.effect(() => {
        this.sessions = inner.sessions
        return () => (this.sessions = undefined)
      }, 'mcp: sessions')
      logNotices(inner, () => this.list())
      recallOnResume(inner, this.subscriptions, this.connections)
    })
    // The first request of a turn waits (bounded) for servers still starting, so their tools are offered.
    // Project servers still waiting for consent are settled first (asked once, or skipped).
    ctx.on(
      'agent/pre-step',
      async (payload, next) => {
        const sessionId = payload.agent.session.id
        if (this.held.size > 0) await this.trust?.consent({ sessionId })
        this.signIns.step(sessionId)
        const scope = payload.agent.scope
        await this.ready(scope)
        // After the first attempts: a server that found no human to sign in is retried with this one.
        const visible = this.connections().filter((c) => c.scope === undefined || c.scope === scope)
        await this.signIns.waiting(sessionId, visible)
        return next()
      },
      { prepend: true },
    )
    const web = registerWebApi(ctx, (scope) => this.resourceMentions(scope))
    // `@server:uri` in a human message: the resource follows as logged context (subscriptions.ts).
    ctx.on('agent/pre-step', async (payload, next) => {
      const { scope, session } = payload.agent
      const [all, also] = [this.connections(), web.subagentScopes(session.id)]
      const out = await this.subscriptions.expand(payload.messages, all, scope, session.id, this.config, also)
      payload.messages.splice(0, payload.messages.length, ...out)
      return next()
    })
  }

  /**
   * Registers one `/mcp__<server>__<prompt>` command per prompt of a global server (commands are
   * global), replacing changed ones and removing vanished ones. A name already taken (by another
   * command or another server's prompt) is skipped with a log line.
   */
  private syncPrompts(connection: McpServerConnection): void {
    if (connection.scope !== undefined) return
    const key = keyOf(connection.name, undefined)
    const current = this.promptCommands.get(key) ?? new Map<string, { key: string; dispose: () => void }>()
    this.promptCommands.set(key, current)
    const commands = this.commands
    const live = this.servers.get(key) === connection
    const wanted = new Map<string, import('@modelcontextprotocol/sdk/types.js').Prompt>()
    if (live)
      for (const prompt of connection.catalog().prompts)
        wanted.set(promptCommandName(connection.name, prompt.name), prompt)
    for (const [name, entry] of current) {
      const prompt = wanted.get(name)
      if (!prompt || JSON.stringify(prompt) !== entry.key) {
        entry.dispose()
        current.delete(name)
      }
    }
    if (!commands) return
    for (const [name, prompt] of wanted) {
      if (current.has(name)) continue
      try {
        const dispose = commands.register(promptCommand(connection, prompt, name, this.ctx.logger('mcp')))
        current.set(name, { key: JSON.stringify(prompt), dispose })
      } catch (error) {
        this.ctx
          .logger('mcp')
          .warn(
            'MCP server "%s": prompt "%s" is not offered as /%s: %s',
            connection.name,
            prompt.name,
            name,
            (error as Error).message,
          )
      }
    }
    if (current.size === 0) this.promptCommands.delete(key)
  }

  /** The prompts, resources and resource templates of a connected (or restarting) server. */
  catalog(name: string, scope?: string) {
    const entry = this.servers.get(keyOf(name, scope))
    return entry instanceof McpServerConnection ? entry.catalog() : undefined
  }

  /** Resources and templates of the connected servers visible from `scope`, for `@` menus (`@server:uri`). */
  resourceMentions(scope?: string) {
    return resourceCandidates(this.connections(), scope)
  }

  /** Every known server (invalid and disabled ones included), sorted by scope then name. */
  list(): McpServerStatus[] {
    const held = [...this.held.values()].map(
      (entry): McpServerStatus => ({
        ...staticStatus({ name: entry.name, source: entry.source, origin: entry.origin, disabled: true }),
        ...('spec' in entry ? { transport: entry.spec.transport } : {}),
        error: this.heldReason.get(entry.name) ?? `the project is not trusted: run "dsh trust ${this.cwd}" to start it`,
      }),
    )
    return [
      ...[...this.servers.values()].map((entry) =>
        entry instanceof McpServerConnection ? entry.status() : staticStatus(entry),
      ),
      ...held,
    ].sort((a, b) => (a.scope ?? '').localeCompare(b.scope ?? '') || a.name.localeCompare(b.name))
  }

  get(name: string, scope?: string): McpServerStatus | undefined {
    return this.list().find((status) => status.name === name && status.scope === scope)
  }

  /**
   * Adds a server from a raw `mcpServers` entry (checked like the configured ones; an invalid one is
   * listed, not thrown). Undone by the returned disposer or when the calling plugin unloads. A name
   * already mounted in the same scope throws.
   */
  add(name: string, raw: unknown, options: AddServerOptions = {}): () => void {
    const source = options.source ?? 'session'
    const checked = checkServer(name, raw, {
      source,
      origin: options.origin ?? source,
      cwd: options.cwd ?? this.cwd,
      env: process.env,
    })
    if (this.servers.has(keyOf(name, options.scope)) || (options.scope === undefined && this.held.has(name)))
      throw new Error(
        `mcp.add: a server named "${name}" is already mounted${options.scope ? ` in scope ${options.scope}` : ''}`,
      )
    let key: string | undefined
    const dispose = this.ctx.effect(() => {
      key = this.mountChecked(checked, options.scope)
      return () => this.remove(key!)
    }, `mcp: server ${name}`)
    return () => void dispose()
  }

  /**
   * Mounts an editor's servers, as ACP's `session/new` / `session/load` send them, for one agent
   * scope (their tools exist only there). Items without a name are logged and skipped; a name
   * mounted twice in the scope keeps the first. Undone by the disposer or when the caller unloads.
   */
  addAcpServers(servers: readonly unknown[], options: { scope: string; cwd: string; origin?: string }): () => void {
    const disposers: Array<() => void> = []
    servers.forEach((server, index) => {
      const converted = fromAcpServer(server, index)
      if ('problem' in converted) {
        this.problem(`${options.origin ?? 'ACP session'}: ${converted.problem}; skipped`)
        return
      }
      if (this.servers.has(keyOf(converted.name, options.scope))) {
        this.problem(
          `${options.origin ?? 'ACP session'}: MCP server "${converted.name}" is given twice; the first is kept`,
        )
        return
      }
      disposers.push(
        this.add(converted.name, converted.entry, {
          source: 'session',
          origin: options.origin ?? 'ACP session',
          scope: options.scope,
          cwd: options.cwd,
        }),
      )
    })
    return () => {
      for (const dispose of disposers.splice(0)) dispose()
    }
  }

  /** Connects a failed server again (or skips a retrying one's wait). False when there is no such server. */
  restart(name: string, scope?: string): boolean {
    const entry = this.servers.get(keyOf(name, scope))
    if (!(entry instanceof McpServerConnection)) return false
    entry.restart()
    return true
  }

  /**
   * Settles when the first connection attempt of every server visible from `scope` (the global ones
   * and that scope's) has finished, waiting at most `waitMs` (default `startupWaitMs`) from each
   * server's mounting.
   */
  async ready(scope?: string, waitMs = this.config.startupWaitMs): Promise<void> {
    const waits = [...this.servers.values()]
      .filter(
        (entry): entry is McpServerConnection =>
          entry instanceof McpServerConnection && (entry.scope === undefined || entry.scope === scope),
      )
      .map((connection) => {
        const left = connection.createdAt + waitMs - Date.now()
        if (left <= 0) return undefined
        if (!Number.isFinite(left)) return connection.firstAttempt
        let timer: NodeJS.Timeout | undefined
        return Promise.race([
          connection.firstAttempt,
          new Promise<void>((resolve) => (timer = setTimeout(resolve, left))),
        ]).finally(() => clearTimeout(timer))
      })
      .filter((wait) => wait !== undefined)
    await Promise.all(waits)
  }

  private mountChecked(entry: CheckedServer, scope?: string): string {
    const key = keyOf(entry.name, scope)
    if ('spec' in entry) {
      const connection = new McpServerConnection(
        entry.name,
        entry.spec,
        entry.source,
        entry.origin,
        {
          ctx: this.ctx,
          subprocess: this.ctx.subprocess,
          options: this.config,
          onStatus: (status, notice) => {
            if (notice) this.ctx.logger('mcp').warn(notice)
            this.ctx.emit('mcp/status', status, notice)
            this.subscriptions.state(this.servers.get(key), status.state)
            // A project server about to be started again runs only while the files it executes are
            // the consented ones (a confined command may have rewritten its script meanwhile).
            if (status.state === 'retrying' && entry.source === 'project' && scope === undefined)
              this.recheck(entry, key)
          },
          onProgress: (progress) => {
            this.ctx.emit('mcp/progress', progress)
            appendProgress(this.sessions, progress, this.ctx.logger('mcp'))
          },
          onCatalog: (connection) => {
            this.syncPrompts(connection)
            this.ctx.emit('mcp/catalog', connection.name, connection.scope)
          },
          onResourceUpdated: (connection, uri) => this.subscriptions.updated(connection, uri),
          onLog: (server, params) => logServerMessage(this.ctx.logger('mcp'), server, params),
          workspace: entry.spec.transport === 'stdio' ? entry.spec.cwd : this.cwd,
          authStore: this.authStore,
          consent: (request) => this.signIns.consent(request),
          elicit: (server, params, sessionId, signal) => this.elicit(server, params, sessionId, signal, scope),
        },
        scope,
      )
      this.servers.set(key, connection)
      connection.start()
      if (scope === undefined) this.commands?.pending(this.ready())
    } else {
      const stored = scope !== undefined ? { ...entry, scope } : entry
      this.servers.set(key, stored)
      if ('invalid' in entry) {
        const notice = `MCP server "${entry.name}" in ${entry.origin} is misconfigured: ${entry.invalid}. It was not started.`
        this.ctx.logger('mcp').warn(notice)
        this.ctx.emit('mcp/status', staticStatus(stored), notice)
      }
    }
    return key
  }

  private recheck(entry: CheckedServer, key: string): void {
    const pin = this.pins.get(entry.name)
    if (!pin || digestKey(serverFileDigests(pin.raw, this.cwd)) === pin.files) return
    this.remove(key)
    this.held.set(entry.name, entry)
    const reason = `a file it executes changed after the project was trusted; it was stopped (run "dsh trust ${this.cwd}" to trust the new content)`
    this.heldReason.set(entry.name, reason)
    const notice = `MCP server "${entry.name}" was not restarted: ${reason}.`
    this.ctx.logger('mcp').warn(notice)
    const status = this.get(entry.name)
    if (status) this.ctx.emit('mcp/status', status, notice)
  }

  private remove(key: string): void {
    const entry = this.servers.get(key)
    if (!entry) return
    this.servers.delete(key)
    this.subscriptions.forget(entry)
    if (entry instanceof McpServerConnection) void entry.dispose()
  }

  /** An elicitation of a server, asked as user questions; declined (and said so) without a human. */
  private elicit(
    server: string,
    params: ElicitRequestFormParams | ElicitRequestURLParams,
    callSession: string | undefined,
    signal: AbortSignal,
    scope: string | undefined,
  ): Promise<ElicitResult> {
    return answerElicitation(this.questions, callSession ?? this.signIns.humanSession, server, params, signal, {
      say: (notice, stderr) => this.say(server, scope, notice, stderr),
      open: (url) => this.openInBrowser(url),
    })
  }

  /** A notice about a server that is not a state change: logged, appended to sessions, and (headless) on stderr. */
  private say(server: string, scope: string | undefined, notice: string, stderr: boolean): void {
    this.ctx.logger('mcp').warn(notice)
    const status = this.get(server, scope)
    if (status) this.ctx.emit('mcp/status', status, notice)
    if (stderr) process.stderr.write(`dsh: ${notice}\n`)
  }

  /** Opens an address in the user's browser (best effort: the address was shown to them as well). */
  private openInBrowser(url: string): void {
    openInBrowser(this.ctx.subprocess, url, {
      ...(this.config.browser ? { command: this.config.browser } : {}),
      cwd: this.cwd,
      killGraceMs: this.config.killGraceMs,
      logger: this.ctx.logger('mcp'),
    })
  }

  /**
   * Signs in to one remote server now (for `dsh mcp login`): `show` receives the authorization URL
   * (print it); resolves with the server's status once it connected or failed.
   */
  async login(name: string, show: (url: string) => void, scope?: string): Promise<McpServerStatus | undefined> {
    const connection = this.servers.get(keyOf(name, scope))
    if (!(connection instanceof McpServerConnection)) return this.get(name, scope)
    await this.signIns.login(connection, show)
    return connection.status()
  }

  private problem(message: string): void {
    this.ctx.logger('mcp').warn(message)
  }
}

const digestKey = (files: Record<string, string>) =>
  JSON.stringify(Object.entries(files).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))

function keyOf(name: string, scope: string | undefined): string {
  return scope === undefined ? name : `${scope}\u0000${name}`
}

export const name = 'mcp-client'
export default McpClient
