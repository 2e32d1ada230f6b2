// The terminal UI: one agent in the current directory, its session folded into a transcript,
// an editor, takeover panels for approvals, questions and pickers, and a status line. It renders
// through pi-tui's differential renderer in the normal screen (no alternate screen), so the
// conversation stays in the terminal's scrollback after exit.
import type { Context } from 'cordis'
import {
  CombinedAutocompleteProvider,
  Container,
  Editor,
  Key,
  Loader,
  ProcessTerminal,
  TUI,
  matchesKey,
  type SelectItem,
  type Terminal,
} from '@mariozechner/pi-tui'
import type { Agent, ModelSelection } from '@dsh/agent'
import type { ReasoningEffort } from '@dsh/llm'
import type { AnySessionEvent, Session } from '@dsh/session'
import { policyAnswerer } from '@dsh/user-approval'
import { continuable, formatAge, resumeStored } from '@dsh/surface-kit'
import { Takeovers } from './takeovers.ts'
import type {} from '@dsh/agent-default-model'
import type {} from '@dsh/commands'
import type {} from '@dsh/permission-presets'
import type {} from '@dsh/session-persistence'
import type {} from '@dsh/token-meter'
import type {} from '@dsh/user-questions'
import type {} from '@dsh/e2b'
import {
  MentionProvider,
  replaceProvider,
  StatusLine,
  TextBlock,
  Transcript,
  editorTheme,
  gitBranch,
  markdownTheme,
  palette,
  type Palette,
  type StatusFields,
} from '@dsh/tui-components'

export interface SessionChoice {
  id: string
  label: string
  description: string
}

/** Commands the TUI handles itself (pickers, exit); every other `/name` goes to ctx.commands. */
export const LOCAL_COMMANDS: ReadonlyArray<{ name: string; description: string }> = [
  { name: 'model', description: 'Pick the model and reasoning effort' },
  { name: 'permissions', description: 'Pick the permission mode' },
  { name: 'resume', description: 'Open a stored session of this directory' },
  { name: 'new', description: 'Start a new session' },
  { name: 'exit', description: 'Leave dsh' },
]

const EFFORTS: Array<ReasoningEffort | 'default'> = ['default', 'off', 'low', 'high', 'max']

export interface TuiAppOptions {
  agent: Agent
  cwd: string
  /** Terminal to drive; default the process's own. */
  terminal?: Terminal
  env?: NodeJS.ProcessEnv
  /** Called once when the user leaves (Ctrl+C twice, Ctrl+D, /exit). */
  onExit(code: number): void
}

export class TuiApp {
  readonly tui: TUI
  readonly p: Palette
  private agent: Agent
  private readonly transcript: Transcript
  private readonly activity = new Container()
  private readonly queuedView = new Container()
  private readonly slot = new Container()
  private readonly editor: Editor
  private readonly status: StatusLine
  private loader?: Loader
  private running = false
  private readonly queued: string[] = []
  private offSession?: () => void
  private readonly offs: Array<() => void> = []
  /** Approval, question, picker and confirmation panels shown in place of the editor. */
  private readonly panels: Takeovers
  private hint?: string
  private hintTimer?: NodeJS.Timeout
  private lastCtrlC = 0
  private contextWindow?: number
  private readonly branch?: string
  private stopped = false
  /** The user asked to leave (the e2b world's change may still be offered first). */
  private leaving = false
  /** The user just declined a confirmation: the next Shift+Tab moves past unconfined presets. */
  private skipUnconfined = false

  constructor(
    private readonly ctx: Context,
    private readonly options: TuiAppOptions,
  ) {
    this.agent = options.agent
    this.p = palette(options.env)
    this.tui = new TUI(options.terminal ?? new ProcessTerminal())
    this.transcript = new Transcript(this.p, markdownTheme(this.p))
    this.transcript.onChange = () => this.tui.requestRender()
    this.editor = new Editor(this.tui, editorTheme(this.p), { paddingX: 1 })
    this.editor.onSubmit = (text) => void this.submit(text)
    this.status = new StatusLine(() => this.statusFields(), this.p)
    this.branch = gitBranch(options.cwd)
    const header = new TextBlock(
      `dsh · ${this.options.cwd}\nEnter sends · Esc cancels a turn · / commands · Ctrl+O expands · Ctrl+C twice exits`,
      '',
      '',
      this.p.gray,
    )
    this.tui.addChild(header)
    this.tui.addChild(this.transcript)
    this.tui.addChild(this.activity)
    this.tui.addChild(this.queuedView)
    this.tui.addChild(this.slot)
    this.tui.addChild(this.status)
    this.activity.addChild(new TextBlock('\n', '', ''))
    this.panels = new Takeovers(this.tui, this.slot, this.editor, this.p)
    this.slot.addChild(this.editor)
    this.tui.setFocus(this.editor)
    this.tui.addInputListener((data) => this.onKey(data))
    this.refreshCompletion()
  }

  get session(): Session {
    return this.agent.session
  }

  /** Starts rendering and attaches to the agent's session (replaying what it already holds). */
  start(): void {
    this.tui.start()
    this.attach()
    this.offs.push(this.registerAnswerers())
    // The e2b world's lines during the run (a continued session's sandbox found gone and replaced)
    // go in the transcript: written to stderr they would land under the screen.
    const world = this.ctx.get('e2b')
    if (world) this.offs.push(world.onNotice((line) => this.transcript.notice(`dsh: ${line}`, this.p.yellow)))
    // Commands that arrive later (an MCP server's prompts once it connected) join the `/` menu.
    this.offs.push(this.ctx.on('commands/changed', () => this.refreshCompletion()))
  }

  /** Restores the terminal (idempotent). */
  stop(): void {
    if (this.stopped) return
    this.stopped = true
    this.loader?.stop()
    if (this.hintTimer) clearTimeout(this.hintTimer)
    this.panels.cancelAll()
    for (const off of this.offs.splice(0)) off()
    this.offSession?.()
    this.tui.stop()
  }

  /** A gray line in the transcript. */
  notice(text: string): void {
    this.transcript.notice(text)
  }

  private exit(code = 0): void {
    if (this.leaving) return
    this.leaving = true
    void this.offerRemoteChange().then((lines) => {
      this.stop()
      for (const line of lines) process.stderr.write(`dsh: ${line}\n`)
      this.options.onExit(code)
    })
  }

  /**
   * In the e2b world the sandbox's change is brought back before leaving (saved as a patch, the
   * sandbox ended) and reaches the local tree only when the user picks "apply" in a panel; else
   * the patch file stays, named with the command that applies it. Answers the lines printed once
   * the UI is gone.
   */
  private async offerRemoteChange(): Promise<string[]> {
    const world = this.ctx.get('e2b')
    if (!world) return []
    this.notice('Saving the E2B sandbox change…')
    let report: Awaited<ReturnType<typeof world.finish>>
    try {
      report = await world.finish()
    } catch (error) {
      return [`the E2B sandbox change could not be saved: ${(error as Error).message}`]
    }
    const lines = report.lines.filter((line) => !report.patches.some((patch) => line.includes(patch.file)))
    for (const patch of report.patches) {
      const choice = await this.pick(`The E2B sandbox ${patch.sandboxId} changed ${patch.files.join(', ')}`, [
        { value: 'apply', label: `Apply it to ${patch.dir}`, description: 'git apply, checked first' },
        { value: 'keep', label: 'Keep the patch file only', description: patch.file },
      ])
      if (choice === 'apply') lines.push((await world.applySaved(patch.file)).line)
      else lines.push(...report.lines.filter((line) => line.includes(patch.file)))
    }
    return lines
  }

  // ---- session ----

  private attach(): void {
    this.offSession?.()
    this.transcript.reset()
    for (const event of this.session.events) this.transcript.apply(event, true)
    this.offSession = this.session.subscribe((event) => this.onEvent(event as AnySessionEvent))
    void this.loadContextWindow()
    this.tui.requestRender()
  }

  private onEvent(event: AnySessionEvent): void {
    if (event.type === 'turn/start') this.setRunning(true)
    this.transcript.apply(event)
    if (event.type === 'user/message' && event.data.source.kind === 'human') {
      const text = event.data.content.map((b) => (b.type === 'text' ? b.text : '')).join('')
      const at = this.queued.indexOf(text)
      if (at >= 0) {
        this.queued.splice(at, 1)
        this.renderQueue()
      }
    }
    if (event.type === 'turn/end') this.setRunning(false)
  }

  private setRunning(running: boolean): void {
    if (this.running === running) return
    this.running = running
    this.loader?.stop()
    this.loader = undefined
    this.activity.clear()
    if (running) {
      // Loader renders an empty line above its spinner line; the idle form keeps the same height.
      this.loader = new Loader(this.tui, this.p.cyan, this.p.gray, 'Working… (esc to cancel)')
      this.activity.addChild(this.loader)
    } else this.activity.addChild(new TextBlock('\n', '', ''))
    this.tui.requestRender()
  }

  private renderQueue(): void {
    this.queuedView.clear()
    for (const text of this.queued)
      this.queuedView.addChild(new TextBlock(text, this.p.gray('queued › '), '         ', this.p.gray))
    this.tui.requestRender()
  }

  private async loadContextWindow(): Promise<void> {
    const { provider, model } = this.agent.model
    const info = await this.ctx.llm.resolveModelInfo(provider, model).catch(() => undefined)
    this.contextWindow = info?.contextWindow
    this.tui.requestRender()
  }

  private statusFields(): StatusFields {
    const meter = this.ctx.get('tokenMeter')
    const usage = meter?.usage(this.session)
    const model = this.agent.model
    return {
      model: `${model.provider}/${model.model}`,
      ...(model.reasoningEffort ? { effort: model.reasoningEffort } : {}),
      ...(this.ctx.get('permissionPresets')
        ? { mode: this.ctx.get('permissionPresets')!.current(this.session.id).name }
        : {}),
      ...(meter?.lastRequestInput(this.session) !== undefined
        ? { contextUsed: meter.lastRequestInput(this.session) }
        : {}),
      ...(this.contextWindow ? { contextWindow: this.contextWindow } : {}),
      ...(usage
        ? {
            tokensIn: usage.live.input + usage.live.cacheRead + usage.live.cacheWrite,
            tokensOut: usage.live.output + usage.live.reasoning,
          }
        : {}),
      cwd: this.options.cwd,
      ...(this.branch ? { branch: this.branch } : {}),
      ...(this.hint ? { hint: this.hint } : {}),
    }
  }

  private flash(hint: string, ms = 2000): void {
    this.hint = hint
    if (this.hintTimer) clearTimeout(this.hintTimer)
    this.hintTimer = setTimeout(() => {
      this.hint = undefined
      this.tui.requestRender()
    }, ms)
    this.hintTimer.unref?.()
    this.tui.requestRender()
  }

  // ---- input ----

  private onKey(data: string): { consume?: boolean; data?: string } | undefined {
    const panel = this.panels.active
    if (matchesKey(data, Key.ctrl('c'))) {
      // In a panel Ctrl+C is Esc: deny, skip or cancel, never allow.
      if (panel) return { data: '\x1b' }
      if (this.editor.getText() !== '') {
        this.editor.setText('')
        return { consume: true }
      }
      if (this.running) {
        this.agent.abort('cancelled by the user (Ctrl+C)')
        return { consume: true }
      }
      const now = Date.now()
      if (now - this.lastCtrlC < 2000) this.exit(0)
      else {
        this.lastCtrlC = now
        this.flash('Press Ctrl+C again to exit')
      }
      return { consume: true }
    }
    if (matchesKey(data, Key.ctrl('d')) && !panel && this.editor.getText() === '') {
      this.exit(0)
      return { consume: true }
    }
    if (matchesKey(data, Key.ctrl('o'))) {
      this.transcript.toggleExpanded()
      return { consume: true }
    }
    if (matchesKey(data, Key.escape) && !panel && this.running && !this.editor.isShowingAutocomplete()) {
      this.agent.abort('cancelled by the user (Esc)')
      return { consume: true }
    }
    if (matchesKey(data, Key.shift('tab')) && !panel) {
      this.cycleMode()
      return { consume: true }
    }
    return undefined
  }

  /** What Enter does with the editor's text: a local command, a shared command, or a message (queued while a turn runs). */
  async submit(raw: string): Promise<void> {
    const text = raw.trim()
    if (text === '') return
    this.editor.addToHistory(raw)
    const local = /^\/([a-z][a-z0-9-]*)\s*(.*)$/s.exec(text)
    if (local && LOCAL_COMMANDS.some((c) => c.name === local[1])) return this.runLocal(local[1], local[2])
    const commands = this.ctx.get('commands')
    if (commands?.isCommandLine(text)) {
      this.transcript.notice(text, this.p.cyan)
      const done = await commands.dispatch(this.agent, text)
      if (done.handled) {
        if (!done.ok) this.transcript.notice(done.error.message, this.p.red)
        else if (done.output) this.transcript.notice(done.output, (s) => s)
        this.tui.requestRender()
        return
      }
    }
    if (this.running) {
      this.queued.push(text)
      this.renderQueue()
    }
    this.agent
      .send(text)
      .catch((error: unknown) => this.transcript.notice(`dsh: ${(error as Error)?.message ?? error}`, this.p.red))
  }

  private refreshCompletion(): void {
    const shared = this.ctx.get('commands')?.list(this.agent) ?? []
    const items = [...LOCAL_COMMANDS, ...shared.filter((c) => !LOCAL_COMMANDS.some((l) => l.name === c.name))]
    const commands = new CombinedAutocompleteProvider(
      items.map((c) => ({ name: c.name, description: c.description })),
      this.options.cwd,
      null,
    )
    // The MCP servers' resources (as last listed) are `@server:uri` mentions.
    const resources = () =>
      (this.ctx.get('mcp')?.resourceMentions(this.agent.scope) ?? []).map((r) => ({
        token: `${r.server}:${r.uri}`,
        description: `${r.name}${r.template ? ' (template)' : ''}${r.description ? ` - ${r.description}` : ''}`,
        template: r.template,
      }))
    const subprocess = this.ctx.get('subprocess') ?? undefined
    const provider = new MentionProvider(commands, this.options.cwd, subprocess, resources, this.panels.fill)
    // A `/` menu open when the list changes stays open and lists the new commands.
    replaceProvider(this.editor, provider)
  }

  // ---- takeovers ----

  private registerAnswerers(): () => void {
    const offs: Array<() => void> = []
    const mine = (sessionId?: string) => sessionId === undefined || sessionId === this.session.id
    const approval = this.ctx.get('approval')
    if (approval) {
      offs.push(
        approval.registerAnswerer({
          name: 'tui',
          accepts: (request) => mine(request.sessionId),
          answer: (request, { signal }) => {
            const policy = this.ctx.get('permissionPresets')?.policyFor(request.sessionId)
            if (policy === 'never' || policy === 'reject') return policyAnswerer(policy).answer(request, { signal })
            return this.panels.askApproval(request, signal)
          },
        }),
      )
    }
    const questions = this.ctx.get('userQuestions')
    if (questions) {
      offs.push(
        questions.registerAnswerer({
          name: 'tui',
          accepts: (request) => mine(request.sessionId),
          answer: (request, { signal }) => this.panels.askQuestions(request, signal),
        }),
      )
    }
    return () => {
      for (const off of offs) off()
    }
  }

  /** A picker over `items`; resolves the picked value, or undefined on Esc. */
  pick(title: string, items: SelectItem[], selected = 0): Promise<string | undefined> {
    return this.panels.pick(title, items, selected)
  }

  // ---- local commands and pickers ----

  private async runLocal(name: string, args: string): Promise<void> {
    switch (name) {
      case 'exit':
        return this.exit(0)
      case 'model':
        return this.pickModel(args)
      case 'permissions':
        return this.pickMode()
      case 'resume':
        return this.pickSession()
      case 'new':
        return this.newSession()
    }
  }

  private async pickModel(spec: string): Promise<void> {
    const current = this.agent.model
    let chosen: { provider: string; model: string } | undefined
    if (spec.trim()) {
      try {
        chosen = await this.ctx.llm.resolveModelSpec(spec.trim(), current.provider)
      } catch (error) {
        this.transcript.notice(`/model ${spec.trim()}: ${(error as Error).message}`, this.p.red)
        return
      }
    } else {
      const items: SelectItem[] = []
      for (const provider of this.ctx.llm.listProviders()) {
        const models = await this.ctx.llm.listModels(provider).catch(() => [])
        for (const m of models)
          items.push({
            value: `${provider}/${m.id}`,
            label: `${provider}/${m.id}`,
            ...(m.displayName ? { description: m.displayName } : {}),
          })
      }
      const at = Math.max(
        0,
        items.findIndex((i) => i.value === `${current.provider}/${current.model}`),
      )
      const value = await this.pick('Model', items, at)
      if (value === undefined) return
      const slash = value.indexOf('/')
      chosen = { provider: value.slice(0, slash), model: value.slice(slash + 1) }
    }
    const effort = await this.pick(
      'Reasoning effort',
      EFFORTS.map((e) => ({ value: e, label: e, ...(e === 'default' ? { description: 'the provider default' } : {}) })),
      Math.max(0, EFFORTS.indexOf(current.reasoningEffort ?? 'default')),
    )
    if (effort === undefined) return
    const next: ModelSelection = { ...current, provider: chosen.provider, model: chosen.model }
    if (effort === 'default') delete next.reasoningEffort
    else next.reasoningEffort = effort as ReasoningEffort
    this.agent.model = next
    // Recorded in the session, so `dsh -c` / `dsh -r ID` reopen it on this model.
    this.ctx.get('agentDefaultModel')?.record(this.session, next)
    this.transcript.notice(
      `model: ${next.provider}/${next.model}${next.reasoningEffort ? ` (${next.reasoningEffort})` : ''}`,
    )
    void this.loadContextWindow()
  }

  private async pickMode(): Promise<void> {
    const presets = this.ctx.get('permissionPresets')
    if (!presets) return this.transcript.notice('no permission presets are mounted in this profile', this.p.red)
    const list = presets.list()
    const current = presets.current(this.session.id).name
    const value = await this.pick(
      'Permission mode',
      list.map((preset) => ({ value: preset.name, label: preset.name, description: preset.description })),
      Math.max(
        0,
        list.findIndex((preset) => preset.name === current),
      ),
    )
    if (value === undefined) return
    presets.set(this.session.id, value)
    this.transcript.notice(`permission mode: ${value}`)
  }

  /** Shift+Tab: the next permission preset; one without confinement only after an explicit `y`. */
  private cycleMode(): void {
    const presets = this.ctx.get('permissionPresets')
    if (!presets) return
    const list = presets.list()
    const sessionId = this.session.id
    const current = presets.current(sessionId).name
    const at = list.findIndex((preset) => preset.name === current)
    const skip = this.skipUnconfined
    this.skipUnconfined = false
    const next = list
      .map((_, i) => list[(at + 1 + i) % list.length])
      .find((preset) => !(skip && preset.mode === 'danger-full-access'))
    if (!next || next.name === current) return
    if (next.mode !== 'danger-full-access') {
      presets.set(sessionId, next.name)
      this.flash(`permission mode: ${next.name}`)
      return
    }
    void this.panels
      .confirm(
        `Switch to ${next.name}?`,
        `${next.description}\nCommands would no longer be confined to the workspace.`,
        `y switches · any other key keeps ${current}`,
      )
      .then((yes) => {
        // Only from the mode the question was asked in (a session switch or /permissions may have moved on).
        if (this.session.id !== sessionId || presets.current(sessionId).name !== current) return
        if (yes) {
          presets.set(sessionId, next.name)
          this.flash(`permission mode: ${next.name}`)
        } else {
          this.skipUnconfined = true
          this.flash(`permission mode unchanged: ${current} · Shift+Tab again skips ${next.name}`, 4000)
        }
      })
  }

  /** Sessions of this directory that ran a turn, newest first. */
  async sessionChoices(): Promise<SessionChoice[]> {
    const store = this.ctx.get('durableSessions')
    if (!store) return []
    const rows = await store.list()
    return rows
      .filter((row) => row.cwd === this.options.cwd && row.id !== this.session.id && continuable(row))
      .map((row) => ({
        id: row.id,
        label: (row.title ?? row.firstPrompt ?? '(no prompt)').replace(/\s+/g, ' ').trim().slice(0, 80),
        description: `${formatAge(row.updatedAt ?? row.createdAt)} · ${row.turns} turn${row.turns === 1 ? '' : 's'}${row.damaged !== undefined ? ' · damaged' : ''}`,
      }))
  }

  async pickSession(): Promise<void> {
    if (!this.ctx.get('durableSessions'))
      return this.transcript.notice('resuming needs a session-persistence row in the profile', this.p.red)
    const choices = await this.sessionChoices()
    if (choices.length === 0) return this.transcript.notice(`no other stored session for ${this.options.cwd}`)
    const id = await this.pick(
      'Resume a session',
      choices.map((c) => ({ value: c.id, label: c.label, description: c.description })),
    )
    if (id !== undefined) await this.openSession(id)
  }

  private async openSession(id: string): Promise<void> {
    let session: Session
    try {
      const opened = await resumeStored(this.ctx.get('durableSessions'), id)
      session = opened.session
      for (const warning of opened.loaded.warnings) this.transcript.notice(`warning: ${warning}`, this.p.yellow)
    } catch (error) {
      this.transcript.notice(`cannot open session ${id}: ${(error as Error).message}`, this.p.red)
      return
    }
    await this.replaceAgent(session)
  }

  private async newSession(): Promise<void> {
    await this.replaceAgent(undefined)
  }

  private async replaceAgent(session: Session | undefined): Promise<void> {
    const old = this.agent
    if (this.running) old.abort('switching sessions')
    const mode = this.ctx.get('permissionPresets')?.current(old.session.id).name
    this.agent = this.ctx.agents.create({ cwd: this.options.cwd, model: old.model, ...(session ? { session } : {}) })
    if (mode) this.ctx.get('permissionPresets')!.set(this.agent.session.id, mode)
    this.setRunning(false)
    this.queued.length = 0
    this.renderQueue()
    this.attach()
    void old.dispose().catch(() => {})
  }
}
