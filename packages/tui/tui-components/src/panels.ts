// Takeover panels shown in place of the editor: an approval answered by keys, a question, and a
// picker (a filtered list). Each resolves exactly once through its callback.
import {
  Input,
  Key,
  SelectList,
  matchesKey,
  truncateToWidth,
  wrapTextWithAnsi,
  type Component,
  type Focusable,
  type SelectItem,
} from '@mariozechner/pi-tui'
import type { ApprovalAnswer, ApprovalChoice, ApprovalRequest } from '@dsh/user-approval'
import type { Question, QuestionAnswer } from '@dsh/user-questions'
import { selectListTheme, type Palette } from './theme.ts'

const wrap = (text: string, width: number) =>
  text.split('\n').flatMap((l) => (l === '' ? [''] : wrapTextWithAnsi(l, Math.max(4, width))))

function frame(p: Palette, title: string, body: string[], width: number): string[] {
  const rule = p.gray('─'.repeat(Math.max(0, width)))
  return [rule, truncateToWidth(p.bold(title), width), ...body.map((l) => truncateToWidth(l, width)), rule]
}

const CHOICE_LABEL: Record<ApprovalChoice, string> = {
  'allowed-once': 'Yes, allow once',
  'allowed-always': 'Yes, and allow this for the rest of the session',
  rejected: 'No, deny',
}
const CHOICE_KEY: Record<ApprovalChoice, string> = { 'allowed-once': 'y', 'allowed-always': 'a', rejected: 'n' }

/**
 * An approval request. Keys: y (allow once), a (for the session), n or Esc (deny), r (deny and
 * type a reason), arrows + Enter. Nothing is highlighted at first, so Enter alone allows nothing.
 */
export class ApprovalPanel implements Component, Focusable {
  focused = false
  private selected = -1
  private reason?: Input
  private done = false

  constructor(
    private readonly request: ApprovalRequest,
    private readonly p: Palette,
    private readonly resolve: (answer: ApprovalAnswer) => void,
  ) {}

  private finish(answer: ApprovalAnswer): void {
    if (this.done) return
    this.done = true
    this.resolve(answer)
  }

  invalidate(): void {}

  handleInput(data: string): void {
    if (this.reason) {
      if (matchesKey(data, Key.escape)) this.reason = undefined
      else this.reason.handleInput(data)
      return
    }
    const options = this.request.options
    const pick = (choice: ApprovalChoice) => {
      if (options.includes(choice)) this.finish({ decision: choice })
    }
    if (data === 'y' || data === 'Y') pick('allowed-once')
    else if (data === 'a' || data === 'A') pick('allowed-always')
    else if (data === 'n' || data === 'N' || matchesKey(data, Key.escape))
      this.finish({ decision: 'rejected', reason: 'the user denied it' })
    else if (data === 'r' || data === 'R') {
      const input = new Input()
      input.focused = true
      input.onSubmit = (value) =>
        this.finish({
          decision: 'rejected',
          reason: 'the user denied it',
          ...(value.trim() ? { message: value.trim() } : {}),
        })
      this.reason = input
    } else if (matchesKey(data, Key.up)) this.selected = this.selected <= 0 ? options.length - 1 : this.selected - 1
    else if (matchesKey(data, Key.down)) this.selected = (this.selected + 1) % options.length
    else if (matchesKey(data, Key.enter) && this.selected >= 0) pick(options[this.selected])
  }

  render(width: number): string[] {
    const { p, request } = this
    const body: string[] = []
    for (const line of wrap(request.title, width)) body.push(line)
    if (request.detail) for (const line of wrap(request.detail, width - 2)) body.push(p.gray(`  ${line}`))
    body.push('')
    request.options.forEach((choice, i) => {
      const marker = i === this.selected ? p.cyan('❯') : ' '
      const label = `${marker} ${CHOICE_KEY[choice]}) ${CHOICE_LABEL[choice]}`
      body.push(i === this.selected ? p.bold(label) : label)
    })
    if (this.reason) {
      body.push(p.gray('Reason for denying (Enter sends, Esc goes back):'))
      body.push(...this.reason.render(width))
    } else {
      body.push(p.gray('y/a/n, or r to deny with a reason · ↑↓ Enter · Esc denies'))
    }
    return frame(p, 'Allow this action?', body, width)
  }
}

/**
 * A batch of questions, one at a time: a list for a question with options (Space toggles when
 * several may be picked, Enter confirms, the last row lets you type instead), else a text line.
 * Esc dismisses the rest of the batch: the answers given so far are returned, the others are
 * left out (the model reads them as unanswered).
 */
export class QuestionPanel implements Component, Focusable {
  focused = false
  private index = 0
  private readonly answers: Record<string, QuestionAnswer> = {}
  private list?: SelectList
  private input?: Input
  private picked = new Set<string>()
  private done = false
  static readonly OTHER = '\u0000other'

  constructor(
    private readonly questions: readonly Question[],
    private readonly p: Palette,
    private readonly resolve: (answers: Record<string, QuestionAnswer>) => void,
  ) {
    this.setup()
  }

  private get question(): Question {
    return this.questions[this.index]
  }

  private setup(): void {
    const q = this.question
    this.picked = new Set()
    this.list = undefined
    this.input = undefined
    if (q.options?.length) {
      const items: SelectItem[] = q.options.map((o) => ({
        value: o.label,
        label: o.label,
        ...(o.description ? { description: o.description } : {}),
      }))
      items.push({ value: QuestionPanel.OTHER, label: 'Type something else…' })
      this.list = new SelectList(items, 8, selectListTheme(this.p))
      this.list.onSelect = (item) => {
        if (item.value === QuestionPanel.OTHER) return this.startInput()
        const selected = q.multiSelect ? [...this.picked] : [item.value]
        if (q.multiSelect && selected.length === 0) selected.push(item.value)
        this.answer({ selected })
      }
    } else this.startInput()
  }

  private startInput(): void {
    const input = new Input()
    input.focused = true
    input.onSubmit = (value) => {
      if (value.trim() === '') return
      this.answer({ selected: [...this.picked], text: value.trim() })
    }
    this.input = input
  }

  private answer(answer: QuestionAnswer): void {
    this.answers[this.question.id] = answer
    if (this.index + 1 < this.questions.length) {
      this.index++
      this.setup()
    } else this.finish(this.answers)
  }

  private finish(value: Record<string, QuestionAnswer>): void {
    if (this.done) return
    this.done = true
    this.resolve(value)
  }

  invalidate(): void {}

  handleInput(data: string): void {
    if (matchesKey(data, Key.escape)) {
      if (this.input && this.list) this.input = undefined
      else this.finish({ ...this.answers })
      return
    }
    if (this.input) {
      this.input.handleInput(data)
      return
    }
    if (this.question.multiSelect && data === ' ' && this.list) {
      const item = this.list.getSelectedItem()
      if (item && item.value !== QuestionPanel.OTHER) {
        if (this.picked.has(item.value)) this.picked.delete(item.value)
        else this.picked.add(item.value)
      }
      return
    }
    this.list?.handleInput(data)
  }

  render(width: number): string[] {
    const { p } = this
    const q = this.question
    const body: string[] = []
    const counter = this.questions.length > 1 ? ` (${this.index + 1}/${this.questions.length})` : ''
    for (const line of wrap(q.question, width)) body.push(line)
    if (this.list) {
      const lines = this.list.render(width)
      // Mark multi-select picks; the list itself shows the highlight.
      body.push(
        ...(q.multiSelect
          ? lines.map((l) => {
              const hit = [...this.picked].some((v) => l.includes(v))
              return hit ? `${l} ${p.green('✓')}` : l
            })
          : lines),
      )
    }
    if (this.input) {
      body.push(p.gray('Your answer (Enter sends):'))
      body.push(...this.input.render(width))
    }
    body.push(
      p.gray(
        q.multiSelect ? 'Space toggles · Enter confirms · Esc skips the rest' : 'Enter confirms · Esc skips the rest',
      ),
    )
    return frame(p, `${q.header ? `${q.header}: ` : ''}Question${counter}`, body, width)
  }
}

/** A titled list with type-to-filter (substring of label or description); Enter picks, Esc cancels. */
export class Picker implements Component, Focusable {
  focused = false
  private list: SelectList
  private filter = ''
  private done = false

  constructor(
    private readonly title: string,
    private readonly items: SelectItem[],
    private readonly p: Palette,
    private readonly resolve: (value: string | undefined) => void,
    selectedIndex = 0,
  ) {
    this.list = this.makeList(items)
    this.list.setSelectedIndex(selectedIndex)
  }

  private makeList(items: SelectItem[]): SelectList {
    const list = new SelectList(items, 10, selectListTheme(this.p), { maxPrimaryColumnWidth: 64 })
    list.onSelect = (item) => this.finish(item.value)
    list.onCancel = () => this.finish(undefined)
    return list
  }

  private setFilter(filter: string): void {
    this.filter = filter
    const needle = filter.toLowerCase()
    this.list = this.makeList(
      this.items.filter((i) => `${i.label} ${i.description ?? ''}`.toLowerCase().includes(needle)),
    )
  }

  private finish(value: string | undefined): void {
    if (this.done) return
    this.done = true
    this.resolve(value)
  }

  invalidate(): void {
    this.list.invalidate()
  }

  handleInput(data: string): void {
    if (matchesKey(data, Key.backspace)) this.setFilter(this.filter.slice(0, -1))
    else if (data.length === 1 && data >= ' ' && data !== '\x7f') this.setFilter(this.filter + data)
    else this.list.handleInput(data)
  }

  render(width: number): string[] {
    const hint = this.p.gray(`${this.filter ? `filter: ${this.filter} · ` : 'type to filter · '}↑↓ Enter · Esc cancels`)
    return frame(this.p, this.title, [...this.list.render(width), hint], width)
  }
}

/**
 * A yes/no question that defaults to no: `y` answers yes; every other key (n, Esc, Enter, a
 * repeated shortcut, a paste) answers no, so a key pressed out of habit never confirms.
 */
export class ConfirmPanel implements Component, Focusable {
  focused = false
  private done = false

  constructor(
    private readonly title: string,
    private readonly body: string,
    private readonly hint: string,
    private readonly p: Palette,
    private readonly resolve: (yes: boolean) => void,
  ) {}

  invalidate(): void {}

  handleInput(data: string): void {
    if (this.done) return
    this.done = true
    this.resolve(data === 'y' || data === 'Y')
  }

  render(width: number): string[] {
    return frame(this.p, this.title, [...wrap(this.body, width), '', this.p.gray(this.hint)], width)
  }
}
