// Boundary checks for questions (from a model or a caller) and answers (from a channel).
import type { Question, QuestionAnswer } from './types.ts'

/** Returns a sentence naming the first problem, or undefined when the batch is well formed. */
export function checkQuestions(questions: unknown): string | undefined {
  if (!Array.isArray(questions) || questions.length === 0) return 'questions must be a non-empty array'
  const ids = new Set<string>()
  for (const [index, raw] of questions.entries()) {
    const q = raw as Partial<Question> | null
    const at = `questions[${index}]`
    if (q === null || typeof q !== 'object') return `${at} must be an object`
    if (typeof q.id !== 'string' || q.id.trim() === '') return `${at}.id must be a non-empty string`
    if (ids.has(q.id)) return `${at}.id ${JSON.stringify(q.id)} is used twice; ids must be unique`
    ids.add(q.id)
    if (typeof q.question !== 'string' || q.question.trim() === '') return `${at}.question must be a non-empty string`
    if (q.header !== undefined && typeof q.header !== 'string') return `${at}.header must be a string`
    if (q.multiSelect !== undefined && typeof q.multiSelect !== 'boolean') return `${at}.multiSelect must be a boolean`
    if (q.options !== undefined) {
      if (!Array.isArray(q.options)) return `${at}.options must be an array`
      const labels = new Set<string>()
      for (const [i, option] of q.options.entries()) {
        if (
          option === null ||
          typeof option !== 'object' ||
          typeof option.label !== 'string' ||
          option.label.trim() === ''
        ) {
          return `${at}.options[${i}].label must be a non-empty string`
        }
        if (labels.has(option.label)) return `${at}.options[${i}].label ${JSON.stringify(option.label)} is used twice`
        labels.add(option.label)
        if (option.description !== undefined && typeof option.description !== 'string')
          return `${at}.options[${i}].description must be a string`
      }
    }
  }
  return undefined
}

/** Normalises a channel's answers against the questions; returns a problem sentence on bad input. */
export function checkAnswers(
  questions: readonly Question[],
  raw: unknown,
): { answers: Record<string, QuestionAnswer> } | { problem: string } {
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw))
    return { problem: 'answers must be an object keyed by question id' }
  const answers: Record<string, QuestionAnswer> = {}
  const byId = new Map(questions.map((q) => [q.id, q]))
  for (const [id, value] of Object.entries(raw as Record<string, unknown>)) {
    const question = byId.get(id)
    if (!question) return { problem: `answer for unknown question ${JSON.stringify(id)}` }
    const answer = value as Partial<QuestionAnswer> | null
    if (answer === null || typeof answer !== 'object')
      return { problem: `answer ${JSON.stringify(id)} must be an object` }
    const raw = answer.selected ?? []
    if (!Array.isArray(raw) || raw.some((label) => typeof label !== 'string'))
      return { problem: `answer ${JSON.stringify(id)}: selected must be an array of labels` }
    const selected = [...new Set(raw)]
    const labels = new Set((question.options ?? []).map((option) => option.label))
    const unknown = selected.find((label) => !labels.has(label))
    if (unknown !== undefined)
      return { problem: `answer ${JSON.stringify(id)}: ${JSON.stringify(unknown)} is not one of its options` }
    if (!question.multiSelect && selected.length > 1)
      return { problem: `answer ${JSON.stringify(id)}: only one option may be selected` }
    if (answer.text !== undefined && typeof answer.text !== 'string')
      return { problem: `answer ${JSON.stringify(id)}: text must be a string` }
    const text = answer.text?.trim() ? answer.text : undefined
    if (selected.length === 0 && text === undefined) continue // picked nothing, wrote nothing: unanswered
    answers[id] = { selected, ...(text !== undefined ? { text } : {}) }
  }
  return { answers }
}
