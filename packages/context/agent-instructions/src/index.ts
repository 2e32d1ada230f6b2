// @dsh/agent-instructions: loads AGENTS.md-compatible instruction files into durable history.
// At a session's first step: the user-global file, then the project chain from the repository
// root down to the cwd. After successful filesystem tool calls: instruction files in the touched
// directories (and their ancestors inside the project) that are new, changed or removed, as
// injected context. What the model was told is read back from the log, so it survives resume.
import type { Context } from 'cordis'
import Schema from 'schemastery'
import { join, resolve as resolvePath } from 'node:path'
import type { InjectedContext, PreStepDecision, PreStepPayload } from '@dsh/agent'
import type { Session } from '@dsh/session'
import type { PostExecutePayload } from '@dsh/tools'
import { resolveDshHome } from '@dsh/home-paths'
import { harnessReadRefusal } from '@dsh/sandbox-policy'
import {
  chain,
  findInstructionFile,
  projectRoot,
  realOrUndefined,
  touchedDir,
  type Found,
  type ReadCheck,
} from './files.ts'
import {
  bodyOf,
  messageOf,
  renderBody,
  renderChanged,
  renderLoaded,
  renderOmitted,
  renderRemoved,
  type Rendered,
  type Scope,
} from './render.ts'

export { chain, findInstructionFile, projectRoot } from './files.ts'
export { bodyOf, renderBody, renderChanged, renderLoaded, renderRemoved } from './render.ts'

export const name = '@dsh/agent-instructions'
export const inject = ['agents']

export interface Config {
  fileNames: string[]
  userGlobal: boolean
  globalDir?: string
  rootMarkers: string[]
  maxFileBytes: number
  maxInitialBytes: number
  discoverNested: boolean
  tools: string[]
}

export const Config: Schema<Partial<Config>, Config> = Schema.object({
  fileNames: Schema.array(String)
    .default(['AGENTS.md', 'CLAUDE.md'])
    .description('Instruction file names, in order of preference: in each directory the first that exists is used.'),
  userGlobal: Schema.boolean()
    .default(true)
    .description('Load the user-global file from `globalDir` at session start.'),
  globalDir: Schema.string().description(
    'Directory of the user-global file. Default: $DSH_HOME (ctx.homePaths when mounted).',
  ),
  rootMarkers: Schema.array(String)
    .default(['.git'])
    .description('Names whose presence marks the project root; the project chain runs from there down to the cwd.'),
  maxFileBytes: Schema.natural()
    .min(1)
    .default(32_768)
    .description('Bytes of one file shown to the model; the rest is cut with a stated marker.'),
  maxInitialBytes: Schema.natural()
    .min(1)
    .default(131_072)
    .description('Bytes of all files loaded at session start together.'),
  discoverNested: Schema.boolean()
    .default(true)
    .description('Report new, changed and removed instruction files after filesystem tool calls.'),
  tools: Schema.array(String)
    .default(['read', 'write', 'edit', 'glob', 'grep'])
    .description(
      'Tools whose successful calls trigger discovery; their `file_path` or `path` argument names what they touched.',
    ),
})

export const SOURCE_PLUGIN = name

/** What the model currently knows per file path: the body it saw, or undefined once removed. */
type Known = Map<string, string | undefined>

export function apply(ctx: Context, config: Config): void {
  if (config.fileNames.length === 0) throw new TypeError('agent-instructions: fileNames must name at least one file')
  for (const file of config.fileNames) {
    if (file === '' || file.includes('/') || file.includes('\0'))
      throw new TypeError(`agent-instructions: fileNames entry ${JSON.stringify(file)} must be a plain file name`)
  }
  const logger = ctx.logger('agent-instructions')
  const warned = new Set<string>()
  /** Rendered but not yet logged (injected, waiting for the next request), per session. */
  const pending = new WeakMap<Session, Map<string, Rendered>>()
  /** One discovery at a time per session, so parallel tool calls do not report a file twice. */
  const locks = new WeakMap<Session, Promise<void>>()

  const warn = (path: string, reason: string) => {
    const key = `${path}\0${reason}`
    if (warned.has(key)) return
    warned.add(key)
    logger.warn('skipped instruction file %s: %s', path, reason)
  }

  const globalDir = (): string => config.globalDir ?? ctx.get('homePaths')?.home ?? resolveDshHome()

  /** Latest message text per path, read incrementally from the log (only the scan position is extra). */
  const logged = new WeakMap<Session, { scanned: number; texts: Map<string, string> }>()

  /** Log-derived knowledge, overlaid with what is injected but not logged yet. */
  function known(session: Session): Known {
    let index = logged.get(session)
    if (!index) logged.set(session, (index = { scanned: 0, texts: new Map() }))
    const events = session.events
    for (let seq = index.scanned; seq < events.length; seq++) {
      const m = messageOf(events[seq], name)
      if (m) index.texts.set(m.path, m.text)
    }
    index.scanned = events.length
    const map: Known = new Map()
    for (const [path, text] of index.texts) map.set(path, bodyOf(text))
    const queue = pending.get(session)
    if (queue) {
      for (const [path, r] of queue) {
        if (index.texts.get(path) === r.text) queue.delete(path)
        else map.set(path, r.body)
      }
    }
    return map
  }

  /**
   * What may be read for `session`: a project file only when its real path lies in the project
   * root (a cloned repository's `AGENTS.md` linked to `~/.ssh/id_rsa` or the dsh credentials is
   * not sent to the model), and in a confining mode nothing the sandbox hides (sandbox-policy's
   * `harnessReadRefusal`: credential files, per-process /proc entries). The user-global file may
   * be a link anywhere the user chose, except into those.
   */
  const checkFor = (session: Session, cwd: string, root: string | undefined): ReadCheck => {
    const policy = ctx.get('sandboxPolicy')?.resolve({ sessionId: session.id, cwd })
    return (path, opened) =>
      harnessReadRefusal(path, policy, {
        ...(root !== undefined ? { roots: [root] } : {}),
        ...(opened !== undefined ? { opened } : {}),
      })
  }

  async function read(dir: string, maxBytes: number, check: ReadCheck): Promise<Found> {
    const found = await findInstructionFile(dir, config.fileNames, maxBytes, check)
    if (found.kind === 'problem') warn(found.path, found.reason)
    return found
  }

  /** The session-start chain: user-global file, then root..cwd. */
  async function initialChain(session: Session, cwd: string): Promise<Rendered[]> {
    const out: Rendered[] = []
    const seen = new Set<string>()
    let budget = config.maxInitialBytes
    const root = await projectRoot(cwd, config.rootMarkers)
    const add = async (dir: string, scope: Scope) => {
      const check = checkFor(session, cwd, scope === 'user' ? undefined : root)
      const found = await read(dir, Math.max(1, Math.min(config.maxFileBytes, budget)), check)
      if (found.kind !== 'file' || seen.has(found.real)) return
      seen.add(found.real)
      if (budget <= 0) {
        out.push(renderLoaded(found.path, scope, renderOmitted(found.path, found.size, config.maxInitialBytes)))
        return
      }
      budget -= found.shownBytes
      out.push(renderLoaded(found.path, scope, renderBody(found.text, found.size, found.shownBytes, found.path)))
    }
    if (config.userGlobal) await add(globalDir(), 'user')
    for (const dir of chain(root, resolvePath(cwd))) await add(dir, 'project')
    return out
  }

  /** New, changed and removed files in `dirs`, compared with what the model knows. */
  async function discover(session: Session, cwd: string, root: string, dirs: string[]): Promise<Rendered[]> {
    const check = checkFor(session, cwd, root)
    const state = known(session)
    const live = new Set<string>()
    for (const [path, body] of state) {
      if (body === undefined) continue
      const real = await realOrUndefined(path)
      if (real) live.add(real)
    }
    const out: Rendered[] = []
    for (const dir of dirs) {
      const found = await read(dir, config.maxFileBytes, check)
      if (found.kind === 'problem') continue
      // Files the model knows in this directory that are gone (or replaced by another name).
      for (const file of config.fileNames) {
        const path = join(dir, file)
        if (state.get(path) !== undefined && (found.kind === 'none' || found.path !== path)) {
          out.push(renderRemoved(path))
          state.set(path, undefined)
        }
      }
      if (found.kind !== 'file') continue
      const body = renderBody(found.text, found.size, found.shownBytes, found.path)
      const before = state.get(found.path)
      if (before === undefined) {
        if (live.has(found.real)) continue // the same file under another path (a symlinked directory)
        out.push(renderLoaded(found.path, 'nested', body))
      } else if (before !== body) {
        out.push(renderChanged(found.path, body))
      } else continue
      live.add(found.real)
      state.set(found.path, body)
    }
    return out
  }

  const toContext = (r: Rendered): InjectedContext => ({
    content: r.text,
    source: { kind: 'plugin', plugin: name, label: r.path },
  })

  ctx.on(
    'agent/pre-step',
    async (payload: PreStepPayload, next: () => Promise<PreStepDecision>): Promise<PreStepDecision> => {
      const { session, cwd } = payload.agent
      // The session's first step: no earlier step and no earlier message of ours.
      if (session.last('step/start') || known(session).size > 0) return next()
      let loaded: Rendered[] = []
      try {
        loaded = await initialChain(session, cwd)
      } catch (error) {
        logger.warn('loading instruction files failed: %s', error instanceof Error ? error.message : String(error))
      }
      const decision = await next()
      if (decision.action !== 'enter' || loaded.length === 0) return decision
      return { ...decision, messages: [...loaded.map(toContext), ...decision.messages] }
    },
    { prepend: true },
  )

  if (config.discoverNested) {
    ctx.on('tools/post-execute', async (payload: PostExecutePayload, next: () => Promise<void>) => {
      await next()
      const { output, context, tool } = payload
      if (output.isError || output.error || !config.tools.includes(tool.name) || !context.agentId) return
      const agent = ctx.agents.get(context.agentId)
      if (!agent) return
      const args = (payload.args ?? {}) as { file_path?: unknown; path?: unknown }
      const target =
        typeof args.file_path === 'string' ? args.file_path : typeof args.path === 'string' ? args.path : '.'
      const { session } = agent
      const previous = locks.get(session) ?? Promise.resolve()
      const run = previous.then(async () => {
        try {
          const root = await projectRoot(agent.cwd, config.rootMarkers)
          const dir = await touchedDir(resolvePath(context.cwd, target))
          const dirs = chain(root, dir)
          if (dirs.length === 0) return
          const found = await discover(session, agent.cwd, root, dirs)
          let queue = pending.get(session)
          if (!queue) pending.set(session, (queue = new Map()))
          for (const r of found) {
            queue.set(r.path, r)
            agent.inject(toContext(r))
          }
        } catch (error) {
          logger.warn(
            'discovering instruction files failed: %s',
            error instanceof Error ? error.message : String(error),
          )
        }
      })
      locks.set(session, run)
      await run
    })
  }
}
