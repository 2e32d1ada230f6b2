// @dsh/project-trust: `ctx.projectTrust`, the gate every project-shipped source that starts a
// process or changes what dsh runs goes through (.mcp.json servers, project hook files). Consent
// is per project directory (real path), per source and per content hash, stored under $DSH_HOME.
// A source hands its items and a start function to `gate()`: trusted content starts at once;
// otherwise the first step of a session asks the human once (TUI, web), or, with no human at hand
// (headless, ACP, SDK), skips it with one stderr line naming `dsh trust`.
import { type Context, Service } from 'cordis'
import Schema from 'schemastery'
import type {} from '@dsh/agent'
import type {} from '@dsh/home-paths'
import type { UserQuestionsService } from '@dsh/user-questions'
import {
  hashItems,
  projectDir,
  sortItems,
  TrustStore,
  type Evaluation,
  type ProjectEntry,
  type TrustRequest,
} from './store.ts'

export * from './store.ts'

/** The module export a gated row offers so `dsh trust` can show what it would run without booting it. */
export type ProjectTrustRequests = (config: Record<string, unknown> | undefined, cwd: string) => TrustRequest[]

export const TRUST_HELP_HINT = (dir: string) =>
  `review and trust them with "dsh trust ${quote(dir)}" (undo: "dsh trust --revoke ${quote(dir)}"; all: "dsh trust --list")`

function quote(path: string): string {
  return /^[A-Za-z0-9_./@%+=:,-]+$/.test(path) ? path : `'${path.replace(/'/g, `'\\''`)}'`
}

export interface ProjectTrustConfig {
  /** The store file; default `$DSH_HOME/trusted-projects.json`. */
  file?: string
  /** `auto`: ask a human through `ctx.userQuestions` when one of `askVia` can answer; `never`: always skip. */
  ask: 'auto' | 'never'
  /** Question answerers that are a human at the keyboard. */
  askVia: string[]
}

declare module 'cordis' {
  interface Context {
    projectTrust: ProjectTrust
  }
  interface Events {
    /** Gated sources that were not started, and why (`declined`, `no-human`). */
    'project-trust/skipped'(evaluations: Evaluation[], reason: 'declined' | 'no-human'): void
    /** Gated sources started after a consent given in this process. */
    'project-trust/trusted'(evaluations: Evaluation[]): void
  }
}

interface Gate {
  evaluation: Evaluation
  start: () => void
  state: 'pending' | 'started' | 'skipped' | 'disposed'
}

export const TRUST_OPTION = 'Trust and run'
export const SKIP_OPTION = 'Not now'

export class ProjectTrust extends Service {
  static inject = ['homePaths']

  static Config: Schema<Partial<ProjectTrustConfig>, ProjectTrustConfig> = Schema.object({
    file: Schema.string().description('The consent store (default: $DSH_HOME/trusted-projects.json).'),
    ask: Schema.union(['auto', 'never'])
      .default('auto')
      .description('auto: ask a human (askVia) once per run; never: skip untrusted project sources.'),
    askVia: Schema.array(Schema.string())
      .default(['tui', 'web'])
      .description('Question answerers that are a human at hand.'),
  })

  readonly store: TrustStore
  private readonly gates = new Set<Gate>()
  private asking: Promise<void> | undefined
  private warnedDamage = false
  private questions: UserQuestionsService | undefined

  constructor(
    ctx: Context,
    readonly config: ProjectTrustConfig,
  ) {
    super(ctx, 'projectTrust')
    this.store = config.file ? new TrustStore(config.file) : TrustStore.inHome(ctx.homePaths.home)
    ctx.inject(['userQuestions'], (inner) => {
      inner.effect(() => {
        this.questions = inner.userQuestions
        return () => (this.questions = undefined)
      }, 'project-trust: the questions seam')
    })
    // The first step of a session settles what is pending before its model request (sources that
    // must be up for that request await `consent()` in their own listeners as well).
    ctx.on(
      'agent/pre-step',
      async (payload, next) => {
        await this.consent({ sessionId: payload.agent.session.id })
        return next()
      },
      { prepend: true },
    )
  }

  /** What `request` would run, its content hash, and whether that exact content is trusted. */
  evaluate(request: TrustRequest): Evaluation {
    const dir = projectDir(request.dir)
    const items = sortItems(request.items)
    const hash = hashItems(request.source, items)
    const read = this.store.read()
    if (!read.ok) this.warnDamage(read.problem)
    const trusted = read.ok && read.file.projects[dir]?.sources[request.source]?.hash === hash
    return { source: request.source, label: request.label, dir, items, hash, trusted }
  }

  /** Records consent to exactly this evaluation's content. Rejects (changing nothing) for a damaged store. */
  trust(evaluation: Pick<Evaluation, 'dir' | 'source' | 'hash' | 'items'>): Promise<void> {
    return this.store.trust(evaluation)
  }

  revoke(dir: string): Promise<boolean> {
    return this.store.revoke(projectDir(dir))
  }

  list(): ProjectEntry[] {
    return this.store.list()
  }

  /**
   * Gates a project source. No items: nothing to do. Trusted content: `start` runs now. Otherwise
   * the source waits for `consent()`: `start` runs if the human trusts it, else never. The
   * returned disposer withdraws the gate (it does not stop what `start` started).
   */
  gate(request: TrustRequest, start: () => void): () => void {
    if (request.items.length === 0) return () => {}
    const evaluation = this.evaluate(request)
    const gate: Gate = { evaluation, start, state: 'pending' }
    if (evaluation.trusted) {
      gate.state = 'started'
      start()
      return () => {}
    }
    this.gates.add(gate)
    return () => {
      gate.state = 'disposed'
      this.gates.delete(gate)
    }
  }

  /** Untrusted sources still waiting for a decision in this process. */
  pending(): Evaluation[] {
    return [...this.gates].filter((gate) => gate.state === 'pending').map((gate) => gate.evaluation)
  }

  /**
   * Settles every pending gate once: asks the human (one question for all of them) when one is at
   * hand, else skips them with one stderr line. Concurrent callers share the same settlement.
   */
  consent(options: { sessionId?: string; signal?: AbortSignal } = {}): Promise<void> {
    if (this.asking !== undefined) return this.asking
    const open = [...this.gates].filter((gate) => gate.state === 'pending')
    if (open.length === 0) return Promise.resolve()
    this.asking = this.settle(open, options).finally(() => (this.asking = undefined))
    return this.asking
  }

  private humanAt(sessionId: string | undefined): UserQuestionsService | undefined {
    if (this.config.ask === 'never') return undefined
    const questions = this.questions
    if (!questions) return undefined
    if (!questions.answerers().some((name) => this.config.askVia.includes(name))) return undefined
    return questions.available(sessionId) ? questions : undefined
  }

  private async settle(open: Gate[], options: { sessionId?: string; signal?: AbortSignal }): Promise<void> {
    const evaluations = open.map((gate) => gate.evaluation)
    const questions = this.humanAt(options.sessionId)
    if (!questions) {
      for (const gate of open) gate.state = 'skipped'
      process.stderr.write(`${skipLine(evaluations)}\n`)
      this.ctx.emit('project-trust/skipped', evaluations, 'no-human')
      return
    }
    const outcome = await questions.ask([trustQuestion(evaluations)], {
      ...(options.sessionId !== undefined ? { sessionId: options.sessionId } : {}),
      ...(options.signal ? { signal: options.signal } : {}),
    })
    const yes = outcome.status === 'answered' && outcome.answers.trust?.selected.includes(TRUST_OPTION) === true
    if (!yes) {
      for (const gate of open) if (gate.state === 'pending') gate.state = 'skipped'
      this.ctx.emit('project-trust/skipped', evaluations, 'declined')
      return
    }
    for (const gate of open) {
      if (gate.state !== 'pending') continue
      try {
        await this.store.trust(gate.evaluation)
      } catch (error) {
        // The human said yes: this run goes ahead; the next one asks again.
        this.ctx.logger('project-trust').warn('could not record the consent: %s', (error as Error).message)
        process.stderr.write(`dsh: warning: could not record the project trust: ${(error as Error).message}\n`)
      }
      if (gate.state !== 'pending') continue
      gate.state = 'started'
      gate.start()
    }
    this.ctx.emit('project-trust/trusted', evaluations)
  }

  private warnDamage(problem: string): void {
    if (this.warnedDamage) return
    this.warnedDamage = true
    process.stderr.write(
      `dsh: warning: ${problem}; no project counts as trusted until the file is fixed or moved away\n`,
    )
  }
}

/** What a source would run, one short phrase per source: `MCP servers (a, b)`. */
function phrase(evaluation: Evaluation): string {
  const names = [...new Set(evaluation.items.map((item) => item.name))]
  return `${evaluation.label} (${names.join(', ')})`
}

/** The single stderr line of a run that skipped untrusted project sources. */
export function skipLine(evaluations: readonly Evaluation[]): string {
  const byDir = new Map<string, Evaluation[]>()
  for (const e of evaluations) byDir.set(e.dir, [...(byDir.get(e.dir) ?? []), e])
  const parts = [...byDir].map(
    ([dir, list]) =>
      `${dir} is not trusted, so its ${list.map(phrase).join(' and ')} did not start; ${TRUST_HELP_HINT(dir)}`,
  )
  return `dsh: ${parts.join('; ')}`
}

/** The consent question: every command that would start, exactly as declared. */
export function trustQuestion(evaluations: readonly Evaluation[]) {
  const dirs = [...new Set(evaluations.map((e) => e.dir))]
  const lines = evaluations.flatMap((e) =>
    e.items.map((item) => `- ${e.label}: ${item.name} (${item.file}): ${item.display}`),
  )
  return {
    id: 'trust',
    header: 'Project trust',
    question: `${dirs.join(', ')} ships commands dsh would run on your machine, outside the sandbox:\n${lines.join('\n')}\nTrust this project and run them?`,
    options: [
      { label: TRUST_OPTION, description: 'remembered until these files change ("dsh trust --revoke" forgets it)' },
      { label: SKIP_OPTION, description: 'skip them in this run' },
    ],
  }
}

export const name = 'project-trust'
export default ProjectTrust
