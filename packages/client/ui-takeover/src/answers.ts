// Pure form logic of the question takeover: the answers object `questions.respond` takes, from
// what the human picked and typed. Nothing is picked by default; a question with neither a pick
// nor text is unanswered.
import type { WireQuestion, WireQuestionAnswer } from '@dsh/web-protocol'

export interface QuestionFormState {
  /** Picked option labels per question id. */
  selected: Record<string, string[]>
  /** Free text per question id. */
  text: Record<string, string>
}

export const emptyForm = (): QuestionFormState => ({ selected: {}, text: {} })

/** Toggles `label` for question `q` (a single-choice question keeps at most one pick). */
export function toggleOption(state: QuestionFormState, q: WireQuestion, label: string): QuestionFormState {
  const current = state.selected[q.id] ?? []
  const picked = current.includes(label)
  const next = q.multiSelect
    ? picked
      ? current.filter((l) => l !== label)
      : [...current, label]
    : picked
      ? []
      : [label]
  // Keep the options' order, whatever order they were clicked in.
  const order = (q.options ?? []).map((o) => o.label)
  next.sort((a, b) => order.indexOf(a) - order.indexOf(b))
  return { ...state, selected: { ...state.selected, [q.id]: next } }
}

export function setText(state: QuestionFormState, q: WireQuestion, text: string): QuestionFormState {
  return { ...state, text: { ...state.text, [q.id]: text } }
}

export function isAnswered(state: QuestionFormState, q: WireQuestion): boolean {
  return (state.selected[q.id]?.length ?? 0) > 0 || (state.text[q.id] ?? '').trim() !== ''
}

/** The `answers` param of `questions.respond`: only answered questions, labels of known options. */
export function buildAnswers(
  questions: readonly WireQuestion[],
  state: QuestionFormState,
): Record<string, WireQuestionAnswer> {
  const answers: Record<string, WireQuestionAnswer> = {}
  for (const q of questions) {
    const labels = new Set((q.options ?? []).map((o) => o.label))
    const selected = (state.selected[q.id] ?? []).filter((l) => labels.has(l))
    const text = (state.text[q.id] ?? '').trim()
    if (selected.length === 0 && text === '') continue
    answers[q.id] = { selected: q.multiSelect ? selected : selected.slice(0, 1), ...(text ? { text } : {}) }
  }
  return answers
}
