import { afterEach, describe, expect, it } from 'vitest'
import type { Context } from 'cordis'
import { createHarness, type Harness } from '@dsh/agent-loop-testkit'
import UserQuestionsService, { type QuestionsRequest } from '@dsh/user-questions'
import * as ToolAskUser from '../src/index.ts'

let harness: Harness | undefined
afterEach(async () => {
  await harness?.dispose()
  harness = undefined
})

const lastToolText = (h: Harness) => {
  const messages = h.model.requests.at(-1)!.messages.filter((m: { role: string }) => m.role === 'tool')
  const content = messages.at(-1)!.content as Array<{ type: string; text?: string }>
  return content.map((b) => b.text ?? '').join('')
}
const loggedResult = (h: Harness) =>
  h.session.events.filter((e: { type: string }) => e.type === 'tool/result').at(-1)!.data as {
    error?: { code: string }
  }

const questions = [
  {
    id: 'db',
    header: 'Database',
    question: 'Which database should the service use?',
    options: [{ label: 'Postgres', description: 'recommended' }, { label: 'SQLite' }],
  },
  { id: 'name', question: 'What should the service be called?' },
  {
    id: 'extras',
    question: 'Which extras?',
    options: [{ label: 'metrics' }, { label: 'tracing' }, { label: 'auth' }],
    multi_select: true,
  },
]

describe('ask_user_question', () => {
  it('asks the human and returns the answers to the model', async () => {
    const asked: QuestionsRequest[] = []
    harness = await createHarness({
      script: [{ toolCalls: [{ name: 'ask_user_question', arguments: { questions } }] }, { text: 'thanks' }],
      plugins: [
        [UserQuestionsService],
        [ToolAskUser],
        [
          {
            name: 'human',
            inject: ['userQuestions'],
            apply: (ctx: Context) =>
              void ctx.userQuestions.registerAnswerer({
                name: 'tui',
                answer: (req) => (
                  asked.push(req),
                  {
                    db: { selected: ['Postgres'] },
                    name: { selected: [], text: 'ledger' },
                    extras: { selected: ['metrics', 'auth'], text: 'auth via OIDC' },
                  }
                ),
              }),
          },
        ],
      ],
    })
    const result = await harness.prompt('build a service')
    expect(result.text).toBe('thanks')
    expect(asked).toHaveLength(1)
    expect(asked[0]!.sessionId).toBe(harness.session.id)
    // The batch names the tool call asking it, so a deadline on that call pauses meanwhile.
    const call = harness.session.events.find((e) => e.type === 'tool/call')!.data as { callId: string }
    expect(asked[0]!.callId).toBe(call.callId)
    expect(asked[0]!.questions[2]).toEqual({
      id: 'extras',
      question: 'Which extras?',
      options: [{ label: 'metrics' }, { label: 'tracing' }, { label: 'auth' }],
      multiSelect: true,
    })
    expect(lastToolText(harness)).toBe(
      [
        'The user answered:',
        '- db: Which database should the service use?',
        '  selected: Postgres',
        '- name: What should the service be called?',
        '  answer: ledger',
        '- extras: Which extras?',
        '  selected: metrics, auth',
        '  note: auth via OIDC',
      ].join('\n'),
    )
    expect(loggedResult(harness).error).toBeUndefined()
  })

  it('tells the model that no human can answer when no answerer is connected', async () => {
    harness = await createHarness({
      script: [
        { toolCalls: [{ name: 'ask_user_question', arguments: { questions: [questions[1]] } }] },
        { text: 'assuming "service"' },
      ],
      plugins: [[UserQuestionsService], [ToolAskUser]],
    })
    await harness.prompt('build')
    expect(lastToolText(harness)).toMatch(
      /^No human can answer questions right now \(no human is connected who can answer questions\)\. Do not wait for an answer/,
    )
    expect(loggedResult(harness).error?.code).toBe('NO_HUMAN')
  })

  it('a channel that fails or returns answers outside the options is reported as unavailable', async () => {
    let mode: 'throw' | 'bad' = 'throw'
    harness = await createHarness({
      script: [
        { toolCalls: [{ name: 'ask_user_question', arguments: { questions: [questions[0]] } }] },
        { toolCalls: [{ name: 'ask_user_question', arguments: { questions: [questions[0]] } }] },
        { text: 'ok' },
      ],
      plugins: [[UserQuestionsService], [ToolAskUser]],
    })
    harness.ctx.userQuestions.registerAnswerer({
      name: 'sdk',
      answer: () => {
        if (mode === 'throw') throw new Error('client disconnected')
        return { db: { selected: ['MySQL'] } }
      },
    })
    harness.ctx.on('questions/resolved', () => void (mode = 'bad'))
    await harness.prompt('go')
    const results = harness.session.events
      .filter((e: { type: string }) => e.type === 'tool/result')
      .map((e) => (e.data as { message: { content: Array<{ text: string }> } }).message.content[0]!.text)
    expect(results[0]).toContain('"sdk" failed: client disconnected')
    expect(results[1]).toContain('"MySQL" is not one of its options')
  })

  it('rejects malformed questions with a model-visible error and keeps the turn going', async () => {
    harness = await createHarness({
      script: [
        {
          toolCalls: [
            {
              name: 'ask_user_question',
              arguments: {
                questions: [
                  { id: 'a', question: 'x?' },
                  { id: 'a', question: 'y?' },
                ],
              },
            },
          ],
        },
        { toolCalls: [{ name: 'ask_user_question', arguments: { questions: [] } }] },
        { text: 'ok' },
      ],
      plugins: [[UserQuestionsService], [ToolAskUser]],
    })
    const result = await harness.prompt('go')
    expect(result.reason).toBe('completed')
    const codes = harness.session.events
      .filter((e: { type: string }) => e.type === 'tool/result')
      .map((e) => (e.data as { error?: { code: string } }).error?.code)
    expect(codes).toEqual(['INVALID_ARGUMENTS', 'INVALID_ARGUMENTS'])
    expect(harness.ctx.tools.get('ask_user_question')?.parameters).toMatchObject({
      properties: { questions: { maxItems: 4 } },
    })
  })

  it('a question pending when the turn is cancelled resolves cancelled', async () => {
    harness = await createHarness({
      script: [
        { toolCalls: [{ name: 'ask_user_question', arguments: { questions: [questions[1]] } }] },
        { text: 'never' },
      ],
      plugins: [[UserQuestionsService], [ToolAskUser]],
    })
    harness.ctx.userQuestions.registerAnswerer({ name: 'slow', answer: () => new Promise(() => {}) })
    const resolved = new Promise<string>((resolve) =>
      harness!.ctx.on('questions/resolved', (_r, o) => resolve(o.status)),
    )
    harness.ctx.on('questions/asked', () => void setTimeout(() => harness!.agent.abort('stop'), 0))
    const result = await harness.prompt('go')
    expect(result.reason).toBe('cancelled')
    expect(await resolved).toBe('cancelled')
    expect(harness.ctx.userQuestions.pending()).toEqual([])
  })
})
