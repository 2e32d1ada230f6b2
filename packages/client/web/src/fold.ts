// The fallback view's fold of the session log into display items.
import type { WireEvent } from '@dsh/web-protocol'

export interface Item {
  key: string
  kind: 'user' | 'assistant' | 'tool' | 'error' | 'note'
  text: string
  name?: string
  streaming?: boolean
}

/** Folds the log into display items; text deltas of an unfinished message are joined into one item. */
export function foldItems(events: readonly WireEvent[], upTo: number): Item[] {
  const items: Item[] = []
  let streaming: Item | undefined
  for (let i = 0; i < upTo; i++) {
    const e = events[i]
    const data = e.data as any
    switch (e.type) {
      case 'user/message':
        if (data?.source?.kind !== 'human') break
        items.push({ key: `u${e.seq}`, kind: 'user', text: textOf(data.content) })
        break
      case 'assistant/chunk':
        if (data?.chunk?.kind === 'text-delta') {
          if (!streaming) items.push((streaming = { key: `a${e.seq}`, kind: 'assistant', text: '', streaming: true }))
          streaming.text += data.chunk.text
        }
        break
      case 'assistant/message': {
        const text = textOf(data?.message?.content)
        if (streaming) {
          streaming.text = text || streaming.text
          streaming.streaming = false
          streaming = undefined
        } else if (text) items.push({ key: `a${e.seq}`, kind: 'assistant', text })
        break
      }
      case 'tool/call':
        items.push({
          key: `t${e.seq}`,
          kind: 'tool',
          name: data?.name,
          text: String(data?.arguments ?? '').slice(0, 300),
        })
        break
      case 'turn/end':
        if (streaming) streaming.streaming = false
        streaming = undefined
        if (data?.reason === 'error' && data.error)
          items.push({ key: `e${e.seq}`, kind: 'error', text: `${data.error.message}`, name: data.error.code })
        else if (data?.reason === 'cancelled') items.push({ key: `c${e.seq}`, kind: 'note', text: 'cancelled' })
        break
    }
  }
  return items
}

function textOf(content: unknown): string {
  if (!Array.isArray(content)) return ''
  return content.map((b: any) => (b?.type === 'text' ? String(b.text ?? '') : '')).join('')
}

/** Prompt tokens of the last request that reported usage (uncached input plus cache reads and writes). */
export function lastPromptTokens(events: readonly WireEvent[]): number | undefined {
  for (let i = events.length - 1; i >= 0; i--) {
    const e = events[i]
    if (e.type !== 'assistant/message') continue
    const usage = (e.data as { usage?: { input?: number; cacheRead?: number; cacheWrite?: number } })?.usage
    if (usage) return (usage.input ?? 0) + (usage.cacheRead ?? 0) + (usage.cacheWrite ?? 0)
  }
  return undefined
}
