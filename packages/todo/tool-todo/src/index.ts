// @dsh/tool-todo: the model-facing `todo_write` tool. The agent's whole task list is replaced on
// each call and logged as a `todo/write {todos}` session event, the list's single source of truth
// (UIs and projections read the last such event).
import type { Context } from 'cordis'
import Schema from 'schemastery'
import type { Session } from '@dsh/session'
import type { ToolOutput } from '@dsh/tools'
import { registerPromptSection } from './prompt.ts'
import type {} from '@dsh/session-persistence'

export const TODO_STATUSES = ['pending', 'in_progress', 'completed'] as const
export type TodoStatus = (typeof TODO_STATUSES)[number]

export interface Todo {
  id: string
  content: string
  status: TodoStatus
}

declare module '@dsh/session' {
  interface SessionEventMap {
    /** The agent's whole todo list after a `todo_write` call. */
    'todo/write': { todos: Todo[] }
  }
}

/** The current list of a session: the last `todo/write`, or empty. */
export function currentTodos(session: Pick<Session, 'last'>): Todo[] {
  const last = session.last('todo/write')
  return last ? last.data.todos.map((todo) => ({ ...todo })) : []
}

export interface ToolTodoConfig {
  maxItems: number
  maxContentLength: number
}

export const Config: Schema<Partial<ToolTodoConfig>, ToolTodoConfig> = Schema.object({
  maxItems: Schema.natural().min(1).default(100).description('Most items one list may hold.'),
  maxContentLength: Schema.natural().min(10).default(500).description("Most characters of one item's content."),
})

export const name = 'tool-todo'
export const inject = ['tools', 'sessions']

interface TodoInput {
  id?: string
  content: string
  status: TodoStatus
}

function fail(code: string, message: string): ToolOutput {
  return { content: `Error [${code}]: ${message}`, isError: true, error: { code, message } }
}

const quote = (text: string) => JSON.stringify(text.length > 60 ? `${text.slice(0, 57)}...` : text)

/** Every problem of a proposed list, as sentences naming the items (1-based). */
export function checkTodos(todos: TodoInput[], config: ToolTodoConfig): string[] {
  const problems: string[] = []
  if (todos.length > config.maxItems)
    problems.push(
      `the list has ${todos.length} items; at most ${config.maxItems} are allowed. Merge or drop finished detail.`,
    )
  todos.forEach((todo, i) => {
    if (todo.content.trim() === '')
      problems.push(`item ${i + 1} has empty content; describe the task in a short sentence.`)
    else if (todo.content.length > config.maxContentLength)
      problems.push(
        `item ${i + 1} has ${todo.content.length} characters of content; keep it under ${config.maxContentLength}.`,
      )
    if (todo.id !== undefined && todo.id.trim() === '')
      problems.push(`item ${i + 1} has an empty id; leave id out to have one assigned.`)
  })
  const active = todos.flatMap((todo, i) => (todo.status === 'in_progress' ? [i] : []))
  if (active.length > 1) {
    problems.push(
      `${active.length} items are in_progress (${active.map((i) => `item ${i + 1} ${quote(todos[i].content)}`).join(', ')}); ` +
        'at most one may be in_progress at a time. Keep the one you are working on and set the others to pending (or completed if done).',
    )
  }
  const seen = new Map<string, number>()
  todos.forEach((todo, i) => {
    if (todo.id === undefined) return
    const first = seen.get(todo.id)
    if (first !== undefined)
      problems.push(`items ${first + 1} and ${i + 1} share the id ${JSON.stringify(todo.id)}; ids must be unique.`)
    else seen.set(todo.id, i)
  })
  return problems
}

/** Keeps given ids; a missing id reuses the previous id of an item with the same content, else the next free number. */
export function assignIds(todos: TodoInput[], previous: Todo[]): Todo[] {
  const taken = new Set(todos.flatMap((todo) => (todo.id !== undefined ? [todo.id] : [])))
  const byContent = new Map<string, string>()
  for (const todo of previous) if (!byContent.has(todo.content)) byContent.set(todo.content, todo.id)
  let counter = 1
  return todos.map((todo) => {
    let id = todo.id
    if (id === undefined) {
      const reused = byContent.get(todo.content.trim())
      if (reused !== undefined && !taken.has(reused)) id = reused
      else {
        while (taken.has(String(counter))) counter++
        id = String(counter)
      }
      taken.add(id)
    }
    return { id, content: todo.content.trim(), status: todo.status }
  })
}

export function summary(todos: Todo[]): string {
  if (todos.length === 0) return 'Todo list cleared (0 items).'
  const count = (status: TodoStatus) => todos.filter((todo) => todo.status === status).length
  const done = count('completed')
  const pending = count('pending')
  const current = todos.find((todo) => todo.status === 'in_progress')
  const head = `Todo list saved (${todos.length} item${todos.length === 1 ? '' : 's'}: ${done} completed, ${current ? 1 : 0} in progress, ${pending} pending).`
  if (current) return `${head} In progress: ${current.content}`
  if (pending > 0) return `${head} Nothing is in progress; set the next item to in_progress when you start it.`
  return `${head} All items are completed.`
}

export { PROMPT_SECTION } from './prompt.ts'

export function apply(ctx: Context, config: ToolTodoConfig): void {
  registerPromptSection(ctx)
  // `todo/write` is logged: persistence must know it, or sessions that used the tool do not load.
  // Bound to `inner`, so the registration unwinds with this plugin (or with persistence).
  ctx.inject(['sessionPersistence'], (inner) => {
    inner.sessionPersistence.registerEventType('todo/write')
  })
  ctx.tools.register<{ todos: TodoInput[] }>({
    name: 'todo_write',
    defer: true,
    description:
      'Write your task list for the current work. Each call replaces the whole list, so always send every item, ' +
      'finished ones included. Use it for work with several steps: add the steps when you start, keep exactly one item ' +
      'in_progress while you work on it, and mark it completed as soon as it is done (not in batches later). ' +
      'Skip it for a single, simple step. Items: content (a short imperative sentence), status ' +
      '(pending | in_progress | completed), optional id (kept across calls; assigned when left out).',
    parameters: {
      type: 'object',
      properties: {
        todos: {
          type: 'array',
          description: 'The complete list, in order.',
          items: {
            type: 'object',
            properties: {
              id: { type: 'string', description: 'Stable id of the item; leave out for a new item.' },
              content: { type: 'string', description: 'What to do, in one short sentence.' },
              status: { type: 'string', enum: [...TODO_STATUSES] },
            },
            required: ['content', 'status'],
            additionalProperties: false,
          },
        },
      },
      required: ['todos'],
      additionalProperties: false,
    },
    execute(args, call) {
      const problems = checkTodos(args.todos, config)
      if (problems.length > 0) {
        const listed = problems.length === 1 ? ` ${problems[0]} ` : `\n${problems.map((p) => `- ${p}`).join('\n')}\n`
        return fail(
          'INVALID_TODOS',
          `the todo list was not saved:${listed}Call todo_write again with the whole, corrected list.`,
        )
      }
      const session = call.sessionId !== undefined ? ctx.sessions.get(call.sessionId) : undefined
      if (!session)
        return fail(
          'NO_SESSION',
          'the todo list was not saved: this call is not attached to a session, so there is nowhere to keep it. Continue without a todo list.',
        )
      const todos = assignIds(args.todos, currentTodos(session))
      session.append('todo/write', { todos })
      const counts = Object.fromEntries(TODO_STATUSES.map((s) => [s, todos.filter((t) => t.status === s).length]))
      return { content: summary(todos), meta: { items: todos.length, ...counts } }
    },
  })
}
