// The conversation as components, folded from session events. The log is the truth: a live
// session and a resumed one go through the same fold (a replay skips the raw stream chunks and
// uses the finished messages instead).
//
// Streaming stays cheap and stable: an assistant reply is cut at blank lines outside code fences;
// every finished block is its own cached Markdown component, and only the open tail is parsed again
// per frame. A block's lines never change once it is finished, so the differential renderer only
// rewrites the bottom of the screen while text streams.
import { describeTurnEnd } from '@dsh/session'
import {
  Container,
  Markdown,
  truncateToWidth,
  wrapTextWithAnsi,
  type Component,
  type MarkdownTheme,
} from '@mariozechner/pi-tui'
import type { AnySessionEvent } from '@dsh/session'
import type { Palette } from './theme.ts'
import { ToolCard, sanitize } from './tool-card.ts'

/** A fixed block of prefixed, wrapped text (user message, notice). */
export class TextBlock implements Component {
  private cache?: { width: number; lines: string[] }
  constructor(
    private readonly text: string,
    private readonly firstPrefix: string,
    private readonly restPrefix: string,
    private readonly style: (s: string) => string = (s) => s,
  ) {}

  invalidate(): void {
    this.cache = undefined
  }

  render(width: number): string[] {
    if (this.cache?.width === width) return this.cache.lines
    const inner = Math.max(4, width - 2)
    const lines: string[] = []
    for (const raw of sanitize(this.text).split('\n')) {
      for (const part of raw === '' ? [''] : wrapTextWithAnsi(raw, inner)) {
        lines.push(truncateToWidth((lines.length === 0 ? this.firstPrefix : this.restPrefix) + this.style(part), width))
      }
    }
    this.cache = { width, lines }
    return lines
  }
}

/** One empty line. */
class Gap implements Component {
  invalidate(): void {}
  render(): string[] {
    return ['']
  }
}

/**
 * Offset just past the first blank line outside a code fence that has text after it, or -1. The
 * text before it is a finished Markdown block; a reply is frozen block by block, so streaming it in
 * pieces and setting it whole give the same blocks.
 */
export function firstBlockBoundary(text: string): number {
  let inFence = false
  let pos = 0
  const lines = text.split('\n')
  for (let i = 0; i < lines.length - 1; i++) {
    const line = lines[i]
    pos += line.length + 1
    if (/^\s{0,3}(```|~~~)/.test(line)) inFence = !inFence
    else if (!inFence && line.trim() === '' && i > 0 && lines.slice(i + 1).some((l) => l.trim() !== '')) return pos
  }
  return -1
}

/** The thinking of one reply: one dim line, or the whole text when expanded. */
class ThinkingLine implements Component {
  text = ''
  expanded = false
  done = false
  constructor(private readonly p: Palette) {}
  invalidate(): void {}
  render(width: number): string[] {
    const words = this.text.trim().split(/\s+/).filter(Boolean).length
    const head = this.p.gray(
      `${this.done ? '✻ Thought' : '✻ Thinking…'} (${words} words${this.expanded ? '' : ', ctrl+o to expand'})`,
    )
    if (!this.expanded) return [truncateToWidth(head, width)]
    const body = sanitize(this.text)
      .split('\n')
      .flatMap((l) => (l === '' ? [''] : wrapTextWithAnsi(l, Math.max(4, width - 2))))
      .map((l) => truncateToWidth(`  ${this.p.dim(this.p.italic(l))}`, width))
    return [truncateToWidth(head, width), ...body]
  }
}

/** An assistant reply: optional thinking line, then Markdown blocks (finished ones cached). */
export class AssistantEntry extends Container {
  private text = ''
  private frozenTo = 0
  private frozen: Markdown[] = []
  private thinking?: ThinkingLine
  private readonly tail: Markdown
  private interrupted?: Component

  constructor(
    private readonly p: Palette,
    private readonly theme: MarkdownTheme,
  ) {
    super()
    this.tail = new Markdown('', 0, 0, theme)
    this.layout()
  }

  /** children = [thinking] blocks separated by gaps, the open tail, [interrupted note]. */
  private layout(): void {
    const children: Component[] = this.thinking ? [this.thinking] : []
    for (const block of this.frozen) {
      if (children.length > (this.thinking ? 1 : 0)) children.push(new Gap())
      children.push(block)
    }
    if (this.text.slice(this.frozenTo).trim() !== '') {
      if (this.frozen.length) children.push(new Gap())
      children.push(this.tail)
    }
    if (this.interrupted) children.push(this.interrupted)
    this.children = children
  }

  appendThinking(delta: string): void {
    if (!this.thinking) {
      this.thinking = new ThinkingLine(this.p)
      this.layout()
    }
    this.thinking.text += delta
  }

  setThinkingDone(): void {
    if (this.thinking) this.thinking.done = true
  }

  setExpanded(expanded: boolean): void {
    if (this.thinking) this.thinking.expanded = expanded
  }

  appendText(delta: string): void {
    if (delta !== '') this.update(this.text + delta)
  }

  /** Replaces the text (the finished message is authoritative); frozen blocks are kept when it extends the shown text. */
  setText(text: string): void {
    if (text === this.text) return
    if (!text.startsWith(this.text)) {
      this.frozen = []
      this.frozenTo = 0
    }
    this.update(text)
  }

  /**
   * Freezes the finished blocks of `text` past `frozenTo`. Only the open tail is scanned (a frozen
   * block always ends outside a code fence), so a long reply costs O(tail) per delta, not O(text).
   */
  private update(text: string): void {
    const hadTail = this.text.slice(this.frozenTo).trim() !== ''
    const before = this.frozen.length
    this.text = text
    let rest = text.slice(this.frozenTo)
    for (let boundary = firstBlockBoundary(rest); boundary > 0; boundary = firstBlockBoundary(rest)) {
      const block = rest.slice(0, boundary).replace(/\n+$/, '')
      this.frozenTo += boundary
      rest = rest.slice(boundary)
      if (block.trim() !== '') this.frozen.push(new Markdown(block, 0, 0, this.theme))
    }
    this.tail.setText(rest)
    if (before !== this.frozen.length || hadTail !== (rest.trim() !== '') || before === 0) this.layout()
  }

  markInterrupted(): void {
    if (this.interrupted) return
    this.interrupted = new TextBlock('(interrupted)', '', '', this.p.gray)
    this.layout()
  }

  get isEmpty(): boolean {
    return this.text === '' && !this.thinking
  }
}

interface ToolCallData {
  callId: string
  name: string
  arguments: string
}

/**
 * Folds session events into the conversation container: one card per logged call, one row per
 * reasoning block, in log order, the same live and replayed. `live` entries (the streaming reply,
 * calls announced by the stream) are the rows that the logged message then finishes.
 *
 * A call is found by its id among the calls of the latest message that named it, so a log written
 * before the loop made ids session-unique (two turns both calling `call_0_0`) still gets one card
 * per call, each with its own result.
 */
export class Transcript extends Container {
  private current?: AssistantEntry
  /** The card of the latest call with each id (tool/call and tool/result look calls up here). */
  private readonly cards = new Map<string, ToolCard>()
  /** Every card, for expand/collapse. */
  private readonly allCards: ToolCard[] = []
  /** Cards the current response's stream announced, by stream index and by id. */
  private readonly streamCards = new Map<number, ToolCard>()
  private streamById = new Map<string, ToolCard>()
  /** Reply rows the current response's stream opened, in order (one per run of text/reasoning). */
  private streamEntries: AssistantEntry[] = []
  private expanded = false
  /** Set by the app: called after any change so the screen is redrawn. */
  onChange: () => void = () => {}

  constructor(
    private readonly p: Palette,
    private readonly theme: MarkdownTheme,
  ) {
    super()
  }

  /** Clears everything (before replaying another session). */
  reset(): void {
    this.clear()
    this.current = undefined
    this.cards.clear()
    this.allCards.length = 0
    this.endStream()
  }

  /**
   * Forgets what the current response streamed; a row still thinking is marked done. A card the
   * stream opened for a call that never reached the log (the step failed, or was cancelled before
   * the call was whole) is removed: the transcript shows the log's calls only.
   */
  private endStream(): void {
    for (const entry of this.streamEntries) entry.setThinkingDone()
    for (const card of this.streamById.values()) this.dropCard(card)
    this.streamEntries = []
    this.streamById = new Map()
    this.streamCards.clear()
  }

  /** Removes a card (and the gap before it) that turned out not to be a logged call. */
  private dropCard(card: ToolCard): void {
    const at = this.children.indexOf(card)
    if (at < 0) return
    const before = this.children[at - 1]
    this.removeChild(card)
    if (before instanceof Gap) this.removeChild(before)
    const index = this.allCards.indexOf(card)
    if (index >= 0) this.allCards.splice(index, 1)
    if (this.cards.get(card.callId) === card) this.cards.delete(card.callId)
  }

  /** Adds a top-level item, separated from the one before by an empty line. */
  private push(component: Component): void {
    const last = this.children[this.children.length - 1]
    if (last && !(last instanceof Gap)) this.addChild(new Gap())
    this.addChild(component)
  }

  notice(text: string, style: (s: string) => string = this.p.gray): void {
    this.push(new TextBlock(text, '', '', style))
    this.onChange()
  }

  toggleExpanded(): void {
    this.expanded = !this.expanded
    for (const card of this.allCards) card.setExpanded(this.expanded)
    for (const child of this.children) if (child instanceof AssistantEntry) child.setExpanded(this.expanded)
    this.invalidate()
    this.onChange()
  }

  /** Applies one event. `replay`: from a stored log (raw chunks are skipped). */
  apply(event: AnySessionEvent, replay = false): void {
    switch (event.type) {
      case 'user/message': {
        if (event.data.source.kind !== 'human') break
        const text = event.data.content.map((b) => (b.type === 'text' ? b.text : '[image]')).join('')
        this.current = undefined
        this.push(new TextBlock(text, this.p.cyan('› '), '  ', this.p.bold))
        break
      }
      case 'assistant/chunk': {
        if (replay) return
        const chunk = event.data.chunk
        if (chunk.kind === 'text-delta') this.entry().appendText(chunk.text)
        else if (chunk.kind === 'reasoning-delta') this.entry().appendThinking(chunk.text)
        else if (chunk.kind === 'tool-call-start') {
          const card = this.newCard({ callId: chunk.callId, name: chunk.name, arguments: '' })
          this.streamCards.set(chunk.index, card)
          this.streamById.set(chunk.callId, card)
        } else if (chunk.kind === 'tool-call-delta') {
          const card = this.streamCards.get(chunk.index)
          card?.setArgs(card.args + chunk.argumentsDelta)
        }
        break
      }
      case 'assistant/message': {
        const { message, interrupted } = event.data
        const streamed = this.streamEntries
        const streamedCards = this.streamById
        this.streamEntries = []
        this.streamById = new Map()
        this.streamCards.clear()
        // The message is runs of reasoning/text separated by tool calls. The stream opened one row
        // per run (a card ends the row before it), so run k finishes streamed row k; replayed, or
        // when nothing streamed, the row is made here, in block order.
        let used = 0
        let run = { text: '', reasoning: '' }
        const finishRun = (last: boolean) => {
          const { text, reasoning } = run
          run = { text: '', reasoning: '' }
          if (text === '' && reasoning === '' && !(last && interrupted)) return
          let entry = streamed[used++]
          if (!entry) {
            this.current = undefined
            entry = this.entry()
          }
          if (reasoning !== '' && entry.isEmpty) entry.appendThinking(reasoning)
          entry.setThinkingDone()
          entry.setText(text)
          if (last && interrupted) entry.markInterrupted()
        }
        for (const block of message.content) {
          if (block.type === 'text') run.text += block.text
          else if (block.type === 'reasoning') run.reasoning += block.text
          else if (block.type === 'tool-call') {
            finishRun(false)
            const card = streamedCards.get(block.callId) ?? this.newCard(block)
            streamedCards.delete(block.callId)
            card.setArgs(block.arguments)
            this.cards.set(block.callId, card)
          }
        }
        finishRun(true)
        // A streamed call the message does not hold (cut off by a cancel) never entered the log.
        for (const card of streamedCards.values()) this.dropCard(card)
        // Rows the stream opened beyond the message's runs stop "thinking".
        for (const entry of streamed.slice(used)) entry.setThinkingDone()
        this.streamEntries = []
        this.current = undefined
        break
      }
      case 'tool/call': {
        const card = this.cards.get(event.data.callId) ?? this.newCard(event.data)
        this.cards.set(event.data.callId, card)
        card.setRunning()
        break
      }
      case 'tool/result': {
        const { message, error, meta } = event.data
        const card = this.cards.get(message.callId)
        if (!card) break
        card.setResult({
          text: message.content.map((b) => (b.type === 'text' ? b.text : '[image]')).join(''),
          isError: message.isError === true || error !== undefined,
          ...(error ? { errorMessage: `${error.code}: ${error.message}` } : {}),
          ...(meta ? { meta } : {}),
        })
        break
      }
      case 'step/start':
        // A step that failed left its streamed rows without a message: they are done.
        this.endStream()
        return
      case 'turn/end': {
        this.endStream()
        for (const card of this.cards.values()) card.setAbandoned()
        const { reason, error } = event.data
        this.current = undefined
        if (reason === 'cancelled') this.notice('⎿ cancelled', this.p.yellow)
        else if (reason !== 'completed') this.notice(`⎿ ${describeTurnEnd(reason, error)}`, this.p.red)
        break
      }
      default: {
        // `tool/progress` is declared by the tools that report it (e.g. @dsh/mcp-client), not by
        // the session's own vocabulary, so it is read by name and checked here.
        const { type, data } = event as { type: string; data: Record<string, unknown> }
        if (type !== 'tool/progress' || typeof data?.progress !== 'number') return
        const card = this.cards.get(String(data.callId))
        if (!card || card.state !== 'running') return
        card.setProgress({
          progress: data.progress,
          ...(typeof data.total === 'number' ? { total: data.total } : {}),
          ...(typeof data.message === 'string' && data.message !== '' ? { message: data.message } : {}),
        })
        break
      }
    }
    this.onChange()
  }

  private entry(): AssistantEntry {
    if (!this.current) {
      this.current = new AssistantEntry(this.p, this.theme)
      this.current.setExpanded(this.expanded)
      this.push(this.current)
      this.streamEntries.push(this.current)
    }
    return this.current
  }

  /** A new card for a call, pushed after everything so far. */
  private newCard(call: ToolCallData): ToolCard {
    const card = new ToolCard(call.callId, call.name, call.arguments, this.p)
    card.setExpanded(this.expanded)
    this.cards.set(call.callId, card)
    this.allCards.push(card)
    // A call ends the reply text before it; text after it is a new entry.
    this.current = undefined
    this.push(card)
    return card
  }
}
