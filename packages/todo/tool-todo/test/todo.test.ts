import { afterEach, describe, expect, it } from 'vitest'
import { createHarness, type Harness } from '@dsh/agent-loop-testkit'
import * as ToolTodo from '../src/index.ts'
import { currentTodos } from '../src/index.ts'

let harness: Harness | undefined
afterEach(async () => {
  await harness?.dispose()
  harness = undefined
})

type Result = { message: { content: { text: string }[]; isError?: boolean }; error?: { code: string } }

async function run(calls: (object | string)[], config: object = {}) {
  harness = await createHarness({
    script: [...calls.map((args) => ({ toolCalls: [{ name: 'todo_write', arguments: args }] })), { text: 'done' }],
    plugins: [[ToolTodo, config]],
  })
  await harness.prompt('plan it')
  const events = harness.session.events
  return {
    results: events.filter((e) => e.type === 'tool/result').map((e) => e.data as Result),
    writes: events.filter((e) => e.type === 'todo/write').map((e) => (e.data as { todos: ToolTodo.Todo[] }).todos),
  }
}

describe('@dsh/tool-todo', () => {
  it('logs the whole list as todo/write, assigns ids and tells the model what is in progress', async () => {
    const { results, writes } = await run([
      {
        todos: [
          { content: 'Read the parser', status: 'in_progress' },
          { content: 'Fix the bug', status: 'pending' },
          { id: 'docs', content: 'Update docs', status: 'pending' },
        ],
      },
    ])
    expect(writes).toEqual([
      [
        { id: '1', content: 'Read the parser', status: 'in_progress' },
        { id: '2', content: 'Fix the bug', status: 'pending' },
        { id: 'docs', content: 'Update docs', status: 'pending' },
      ],
    ])
    expect(results[0].message.content[0].text).toBe(
      'Todo list saved (3 items: 0 completed, 1 in progress, 2 pending). In progress: Read the parser',
    )
    // the event precedes the result, and the model saw the result
    const types = harness!.session.events.map((e) => e.type)
    expect(types.indexOf('todo/write')).toBeLessThan(types.indexOf('tool/result'))
    expect(JSON.stringify(harness!.model.requests[1].messages.at(-1))).toContain('Todo list saved')
  })

  it('replaces the list wholesale and keeps ids of unchanged items across calls', async () => {
    const { writes, results } = await run([
      {
        todos: [
          { content: 'A', status: 'in_progress' },
          { content: 'B', status: 'pending' },
        ],
      },
      {
        todos: [
          { content: 'A', status: 'completed' },
          { content: 'B', status: 'completed' },
        ],
      },
      { todos: [] },
    ])
    expect(writes[1]).toEqual([
      { id: '1', content: 'A', status: 'completed' },
      { id: '2', content: 'B', status: 'completed' },
    ])
    expect(results[1].message.content[0].text).toMatch(/All items are completed\.$/)
    expect(writes[2]).toEqual([])
    expect(results[2].message.content[0].text).toBe('Todo list cleared (0 items).')
    expect(currentTodos(harness!.session)).toEqual([])
  })

  it('refuses two in_progress items, naming them, and logs nothing', async () => {
    const { results, writes } = await run([
      {
        todos: [
          { content: 'One', status: 'in_progress' },
          { content: 'Two', status: 'in_progress' },
        ],
      },
    ])
    expect(writes).toEqual([])
    expect(results[0].error?.code).toBe('INVALID_TODOS')
    expect(results[0].message.content[0].text).toBe(
      'Error [INVALID_TODOS]: the todo list was not saved: 2 items are in_progress (item 1 "One", item 2 "Two"); at most one may be in_progress at a time. ' +
        'Keep the one you are working on and set the others to pending (or completed if done). Call todo_write again with the whole, corrected list.',
    )
  })

  it('lists every problem of a malformed list', async () => {
    const { results } = await run(
      [
        {
          todos: [
            { content: '  ', status: 'pending' },
            { id: 'x', content: 'a', status: 'pending' },
            { id: 'x', content: 'b', status: 'pending' },
          ],
        },
      ],
      { maxItems: 2 },
    )
    const text = results[0].message.content[0].text
    expect(text).toContain('- the list has 3 items; at most 2 are allowed')
    expect(text).toContain('- item 1 has empty content')
    expect(text).toContain('- items 2 and 3 share the id "x"')
  })

  it('schema violations (bad status, missing content, not an array) are model-visible errors', async () => {
    const { results, writes } = await run([
      { todos: [{ content: 'A', status: 'done' }] },
      { todos: [{ status: 'pending' }] },
      { todos: 'buy milk' },
      '{"todos": [',
    ])
    expect(writes).toEqual([])
    expect(results.map((r) => r.error?.code)).toEqual([
      'INVALID_ARGUMENTS',
      'INVALID_ARGUMENTS',
      'INVALID_ARGUMENTS',
      'INVALID_JSON',
    ])
    expect(results[0].message.content[0].text).toContain('/todos/0/status')
  })

  it('answers NO_SESSION when called outside a session', async () => {
    harness = await createHarness({ plugins: [[ToolTodo, {}]] })
    const result = await harness.ctx.tools.execute(
      { callId: 'c', name: 'todo_write', arguments: '{"todos":[]}' },
      { cwd: '/' },
    )
    expect(result.error?.code).toBe('NO_SESSION')
  })

  it('unloading removes the tool', async () => {
    harness = await createHarness()
    const fiber = await harness.mount(ToolTodo, {})
    expect(harness.ctx.tools.get('todo_write')).toBeDefined()
    await fiber.dispose()
    expect(harness.ctx.tools.get('todo_write')).toBeUndefined()
  })
})
