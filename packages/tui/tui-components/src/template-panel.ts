// A picked MCP resource template in the terminal: a panel in place of the editor asks for each
// variable of its URI template in turn (Enter takes a value, a blank one is refused with a line
// naming it, Esc cancels), then the filled `@server:uri` replaces the `@query` of the pick.
import {
  Input,
  Key,
  matchesKey,
  truncateToWidth,
  type Component,
  type Editor,
  type Focusable,
} from '@mariozechner/pi-tui'
import { expandTemplate, templateVariables } from '@dsh/mcp-client/contract'
import type { Palette } from './theme.ts'

/** The panel: one value per variable, in order; resolves them all, or undefined on Esc. */
export class TemplatePanel implements Component, Focusable {
  focused = false
  private index = 0
  private readonly values: Record<string, string> = {}
  private input = new Input()
  private empty: string | undefined
  private done = false

  constructor(
    private readonly title: string,
    private readonly variables: readonly string[],
    private readonly p: Palette,
    private readonly resolve: (values: Record<string, string> | undefined) => void,
  ) {
    this.setup()
  }

  private setup(): void {
    this.input = new Input()
    this.input.focused = true
    this.input.onSubmit = (value) => {
      const name = this.variables[this.index]
      if (value.trim() === '') {
        this.empty = name
        return
      }
      this.empty = undefined
      this.values[name] = value.trim()
      if (this.index + 1 < this.variables.length) {
        this.index++
        this.setup()
      } else this.finish({ ...this.values })
    }
  }

  private finish(values: Record<string, string> | undefined): void {
    if (this.done) return
    this.done = true
    this.resolve(values)
  }

  invalidate(): void {}

  handleInput(data: string): void {
    if (matchesKey(data, Key.escape)) this.finish(undefined)
    else this.input.handleInput(data)
  }

  render(width: number): string[] {
    const { p } = this
    const rule = p.gray('─'.repeat(Math.max(0, width)))
    const lines = [rule, truncateToWidth(p.bold(`Fill in ${this.title}`), width)]
    this.variables.forEach((name, i) => {
      if (i < this.index) lines.push(truncateToWidth(`${name}: ${this.values[name]}`, width))
    })
    const name = this.variables[this.index]
    lines.push(truncateToWidth(`${name}:`, width), ...this.input.render(width))
    if (this.empty !== undefined)
      lines.push(
        truncateToWidth(
          p.red(`"${this.empty}" is empty: a resource template needs a value for each of its variables.`),
          width,
        ),
      )
    lines.push(p.gray('Enter takes the value · Esc cancels'), rule)
    return lines
  }
}

/** Where a template was picked: the editor's lines then, and the `@query` before the caret. */
export interface TemplatePick {
  lines: string[]
  cursorLine: number
  cursorCol: number
  prefix: string
}

/**
 * What a `MentionProvider` calls when a template (`server:uriTemplate`) is picked: `ask` shows the
 * panel (undefined when cancelled); the filled mention then replaces the pick's `@query`, or is
 * inserted at the caret when the text changed meanwhile.
 */
export function templateFiller(
  editor: Editor,
  ask: (title: string, variables: string[]) => Promise<Record<string, string> | undefined>,
): (token: string, at: TemplatePick) => void {
  return (token, at) => {
    const colon = token.indexOf(':')
    const [server, template] = [token.slice(0, colon), token.slice(colon + 1)]
    void ask(`@${token}`, templateVariables(template)).then((values) => {
      if (!values) return
      const mention = `@${server}:${expandTemplate(template, values)} `
      if (editor.getText() !== at.lines.join('\n')) return editor.insertTextAtCursor(mention)
      const line = at.lines[at.cursorLine] ?? ''
      const start = at.cursorCol - at.prefix.length
      const lines = [...at.lines]
      lines[at.cursorLine] = line.slice(0, start) + mention + line.slice(at.cursorCol)
      editor.setText(lines.join('\n'))
    })
  }
}
