// MCP elicitation (`elicitation/create`) as user questions: a form's fields become questions (a
// choice for enums and booleans, free text for strings and numbers), an URL request becomes one
// question naming the address. The answers are mapped back to the form's content, checked against
// its schema; a field left empty is omitted (the SDK fills in the schema's defaults).
import type { ElicitRequestFormParams, ElicitRequestURLParams, ElicitResult } from '@modelcontextprotocol/sdk/types.js'
import type { Question, QuestionsOutcome, UserQuestionsService } from '@dsh/user-questions'

export const ACTION_ID = 'mcp_action'
export const SUBMIT = 'Submit'
export const DECLINE = 'Decline'
export const OPEN = 'Open it'

type Property = Record<string, unknown>

const isUrl = (params: ElicitRequestFormParams | ElicitRequestURLParams): params is ElicitRequestURLParams =>
  params.mode === 'url'

function choices(property: Property): Array<{ value: string; label: string }> | undefined {
  const items = property.type === 'array' ? ((property.items ?? {}) as Property) : property
  if (Array.isArray(items.enum)) {
    const names = Array.isArray(property.enumNames) ? (property.enumNames as string[]) : []
    return (items.enum as string[]).map((value, i) => ({ value, label: names[i] ?? value }))
  }
  const list = (items.oneOf ?? items.anyOf) as Array<{ const: string; title?: string }> | undefined
  if (Array.isArray(list)) return list.map((option) => ({ value: option.const, label: option.title ?? option.const }))
  if (property.type === 'boolean')
    return [
      { value: 'true', label: 'Yes' },
      { value: 'false', label: 'No' },
    ]
  return undefined
}

/** Labels must be unique in a question: a repeated label gets its value appended. */
function labelled(options: Array<{ value: string; label: string }>): Array<{ value: string; label: string }> {
  const seen = new Set<string>()
  return options.map((option) => {
    const label = seen.has(option.label) ? `${option.label} (${option.value})` : option.label
    seen.add(label)
    return { ...option, label }
  })
}

/** The questions an elicitation is asked as (the first decides: submit / decline, or open / decline). */
export function elicitationQuestions(
  server: string,
  params: ElicitRequestFormParams | ElicitRequestURLParams,
): Question[] {
  if (isUrl(params)) {
    return [
      {
        id: ACTION_ID,
        header: `MCP ${server}`,
        question: `MCP server "${server}" asks you to open this address in a browser:\n${params.url}\n${params.message}`,
        options: [
          { label: OPEN, description: 'open it in your browser (dsh opens it when it can)' },
          { label: DECLINE },
        ],
      },
    ]
  }
  const schema = params.requestedSchema
  const required = new Set(schema.required ?? [])
  const questions: Question[] = [
    {
      id: ACTION_ID,
      header: `MCP ${server}`,
      question: `MCP server "${server}" asks: ${params.message}\nAnswer the fields below and submit them to the server, or decline.`,
      options: [{ label: SUBMIT }, { label: DECLINE }],
    },
  ]
  for (const [key, raw] of Object.entries(schema.properties)) {
    const property = raw as Property
    const title = (property.title as string | undefined) ?? key
    const notes = [
      property.description as string | undefined,
      required.has(key) ? 'required' : 'optional',
      property.default !== undefined ? `default ${JSON.stringify(property.default)}` : undefined,
      typeof property.format === 'string' ? `format ${property.format}` : undefined,
      property.type === 'number' || property.type === 'integer' ? `a ${property.type}` : undefined,
    ].filter(Boolean)
    const options = choices(property)
    questions.push({
      id: `field_${key}`,
      header: title.slice(0, 40),
      question: `${title} (${notes.join('; ')})`,
      ...(options ? { options: labelled(options).map((option) => ({ label: option.label })) } : {}),
      ...(property.type === 'array' ? { multiSelect: true } : {}),
    })
  }
  return questions
}

/** The elicitation result for the human's outcome; a field the schema refuses makes the whole answer a decline with why. */
export function elicitationResult(
  params: ElicitRequestFormParams | ElicitRequestURLParams,
  outcome: QuestionsOutcome,
): { result: ElicitResult; problem?: string } {
  if (outcome.status === 'cancelled') return { result: { action: 'cancel' } }
  if (outcome.status === 'unavailable') return { result: { action: 'decline' }, problem: outcome.reason }
  const action = outcome.answers[ACTION_ID]?.selected[0]
  if (isUrl(params)) return { result: { action: action === OPEN ? 'accept' : 'decline' } }
  if (action !== SUBMIT) return { result: { action: 'decline' } }
  const content: Record<string, string | number | boolean | string[]> = {}
  for (const [key, raw] of Object.entries(params.requestedSchema.properties)) {
    const property = raw as Property
    const answer = outcome.answers[`field_${key}`]
    if (!answer) continue
    const options = choices(property)
    if (options) {
      const byLabel = new Map(labelled(options).map((option) => [option.label, option.value]))
      const values = answer.selected
        .map((label) => byLabel.get(label))
        .filter((value): value is string => value !== undefined)
      if (property.type === 'array') content[key] = values
      else if (property.type === 'boolean') {
        if (values[0] !== undefined) content[key] = values[0] === 'true'
      } else if (values[0] !== undefined) content[key] = values[0]
      continue
    }
    const text = (answer.text ?? '').trim()
    if (text === '') continue
    if (property.type === 'number' || property.type === 'integer') {
      const value = Number(text)
      if (!Number.isFinite(value) || (property.type === 'integer' && !Number.isInteger(value)))
        return {
          result: { action: 'decline' },
          problem: `"${key}" must be ${property.type === 'integer' ? 'an integer' : 'a number'}, got ${JSON.stringify(text)}`,
        }
      content[key] = value
    } else content[key] = text
  }
  const missing = (params.requestedSchema.required ?? []).filter(
    (key) =>
      !(key in content) && (params.requestedSchema.properties[key] as Property | undefined)?.default === undefined,
  )
  if (missing.length > 0)
    return {
      result: { action: 'decline' },
      problem: `required field${missing.length === 1 ? '' : 's'} left empty: ${missing.join(', ')}`,
    }
  return { result: { action: 'accept', content } }
}

const oneLine = (text: string) => text.replace(/\s+/g, ' ').slice(0, 200)

/**
 * Answers an elicitation of `server` by asking the human at hand in `sessionId`; declined (and
 * said so through `say`, on stderr too) when nobody can answer. A URL the human chose to open is
 * opened through `open`.
 */
export async function answerElicitation(
  questions: UserQuestionsService | undefined,
  sessionId: string | undefined,
  server: string,
  params: ElicitRequestFormParams | ElicitRequestURLParams,
  signal: AbortSignal,
  io: { say(notice: string, stderr: boolean): void; open(url: string): void },
): Promise<ElicitResult> {
  const what = params.mode === 'url' ? `to open ${params.url}` : 'for input'
  if (!questions?.available(sessionId)) {
    io.say(
      `MCP server "${server}" asked ${what} ("${oneLine(params.message)}"); declined: no human is at hand to answer.`,
      true,
    )
    return { action: 'decline' }
  }
  const outcome = await questions.ask(elicitationQuestions(server, params), {
    ...(sessionId !== undefined ? { sessionId } : {}),
    signal,
  })
  const { result, problem } = elicitationResult(params, outcome)
  if (problem) io.say(`MCP server "${server}" asked ${what}; declined: ${problem}.`, false)
  if (
    params.mode === 'url' &&
    result.action === 'accept' &&
    outcome.status === 'answered' &&
    outcome.answers.mcp_action?.selected[0] === OPEN
  ) {
    io.open(params.url)
  }
  return result
}
