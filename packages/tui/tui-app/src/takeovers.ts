// Panels in place of the editor: approvals, questions, pickers, yes/no confirmations and the
// variables of a picked resource template. One
// shows at a time, the others wait in order; when the last closes, the editor is back in focus.
import type { Component, Container, Editor, SelectItem, TUI } from '@mariozechner/pi-tui'
import type { ApprovalAnswer, ApprovalRequest } from '@dsh/user-approval'
import type { QuestionAnswer, QuestionsRequest } from '@dsh/user-questions'
import {
  ApprovalPanel,
  ConfirmPanel,
  Picker,
  QuestionPanel,
  TemplatePanel,
  templateFiller,
  type Palette,
} from '@dsh/tui-components'

export class Takeovers {
  private readonly queue: Array<{ component: Component; cancel(): void }> = []
  /** For the editor's `MentionProvider`: a picked resource template asks for its variables here. */
  readonly fill: ReturnType<typeof templateFiller>

  constructor(
    private readonly tui: TUI,
    private readonly slot: Container,
    private readonly editor: Editor,
    private readonly p: Palette,
  ) {
    this.fill = templateFiller(editor, (title, variables) => this.fillTemplate(title, variables))
  }

  /** Whether a panel is showing (keys then go to it, not to the editor). */
  get active(): boolean {
    return this.queue.length > 0
  }

  /** Closes every panel, each answered as closed before an answer (the UI is stopping). */
  cancelAll(): void {
    for (const t of this.queue.splice(0)) t.cancel()
  }

  /** Shows `component` in place of the editor until `finish` is called (queued behind others). */
  takeover(component: Component, cancel: () => void): () => void {
    const entry = { component, cancel }
    this.queue.push(entry)
    if (this.queue.length === 1) this.showTop()
    return () => {
      const at = this.queue.indexOf(entry)
      if (at < 0) return
      this.queue.splice(at, 1)
      this.showTop()
    }
  }

  private showTop(): void {
    this.slot.clear()
    const top = this.queue[0]
    if (top) {
      this.slot.addChild(top.component)
      this.tui.setFocus(top.component)
    } else {
      this.slot.addChild(this.editor)
      this.tui.setFocus(this.editor)
    }
    this.tui.requestRender()
  }

  askApproval(request: ApprovalRequest, signal: AbortSignal): Promise<ApprovalAnswer> {
    return new Promise((resolve) => {
      let finish = () => {}
      const panel = new ApprovalPanel(request, this.p, (answer) => {
        finish()
        resolve(answer)
      })
      finish = this.takeover(panel, () =>
        resolve({ decision: 'rejected', reason: 'the terminal UI closed before an answer' }),
      )
      signal.addEventListener('abort', () => finish(), { once: true })
    })
  }

  askQuestions(request: QuestionsRequest, signal: AbortSignal): Promise<Record<string, QuestionAnswer>> {
    return new Promise((resolve, reject) => {
      let finish = () => {}
      const panel = new QuestionPanel(request.questions, this.p, (answers) => {
        finish()
        resolve(answers)
      })
      finish = this.takeover(panel, () => reject(new Error('the terminal UI closed before an answer')))
      signal.addEventListener('abort', () => finish(), { once: true })
    })
  }

  /** A picker over `items`; resolves the picked value, or undefined on Esc. */
  pick(title: string, items: SelectItem[], selected = 0): Promise<string | undefined> {
    return new Promise((resolve) => {
      let finish = () => {}
      const picker = new Picker(
        title,
        items,
        this.p,
        (value) => {
          finish()
          resolve(value)
        },
        selected,
      )
      finish = this.takeover(picker, () => resolve(undefined))
    })
  }

  /** The values of a picked resource template's variables, or undefined when cancelled (Esc). */
  fillTemplate(title: string, variables: string[]): Promise<Record<string, string> | undefined> {
    return new Promise((resolve) => {
      let finish = () => {}
      const panel = new TemplatePanel(title, variables, this.p, (values) => {
        finish()
        resolve(values)
      })
      finish = this.takeover(panel, () => resolve(undefined))
    })
  }

  /** A yes/no panel in place of the editor; anything but `y` (or the panel closing) is no. */
  confirm(title: string, body: string, hint: string): Promise<boolean> {
    return new Promise((resolve) => {
      let finish = () => {}
      const panel = new ConfirmPanel(title, body, hint, this.p, (yes) => {
        finish()
        resolve(yes)
      })
      finish = this.takeover(panel, () => resolve(false))
    })
  }
}
