// chooseModel against the real model service (`@dsh/llm`) with one registered adapter: what every
// face does with `--model`, `model: "..."` or nothing.
import { describe, expect, it } from 'vitest'
import { Context } from 'cordis'
import LlmService, { type LlmAdapter } from '@dsh/llm'
import { chooseModel, ModelChoiceError, modelChoiceUsage } from '../src/index.ts'

async function llm(): Promise<Context['llm']> {
  const ctx = new Context()
  await ctx.plugin(LlmService)
  const adapter: LlmAdapter = {
    provider: 'acme',
    async *stream() {},
    listModels: () => [
      { provider: 'acme', id: 'small', contextWindow: 1000 },
      { provider: 'acme', id: 'large', contextWindow: 9000 },
    ],
  }
  ctx.llm.registerAdapter(adapter)
  return ctx.llm
}

const fallback = { provider: 'acme', model: 'small', maxTokens: 512, reasoningEffort: 'low' as const }

async function failure(work: Promise<unknown>): Promise<ModelChoiceError> {
  const error = await work.then(
    () => undefined,
    (e: unknown) => e,
  )
  expect(error).toBeInstanceOf(ModelChoiceError)
  return error as ModelChoiceError
}

describe('chooseModel', () => {
  it('nothing typed: the default, with an effort override; no default is NO_DEFAULT_MODEL', async () => {
    const service = await llm()
    expect(await chooseModel(service, undefined, fallback)).toEqual(fallback)
    expect(await chooseModel(service, undefined, fallback, 'max')).toEqual({ ...fallback, reasoningEffort: 'max' })
    const none = await failure(chooseModel(service, undefined, undefined))
    expect(none.code).toBe('NO_DEFAULT_MODEL')
    expect(modelChoiceUsage(none)).toBe(
      'no model configured: pass --model PROVIDER/MODEL or add the agent-default-model row',
    )
  })

  it("a bare or qualified model on the default's provider keeps the default's settings", async () => {
    const service = await llm()
    expect(await chooseModel(service, 'large', fallback)).toEqual({ ...fallback, model: 'large' })
    expect(await chooseModel(service, 'acme/large', undefined)).toEqual({ provider: 'acme', model: 'large' })
  })

  it("an unknown model carries the service's sentence; no model service is NO_MODEL_SERVICE", async () => {
    const service = await llm()
    const unknown = await failure(chooseModel(service, 'acme/huge', fallback))
    expect(unknown.code).toBe('UNKNOWN_MODEL')
    expect(unknown.spec).toBe('acme/huge')
    expect(unknown.detail).toBe("provider 'acme' has no model 'huge'; known: small, large")
    expect(modelChoiceUsage(unknown)).toBe(
      "--model acme/huge: provider 'acme' has no model 'huge'; known: small, large",
    )
    const missing = await failure(chooseModel(undefined, 'acme/large', fallback))
    expect(missing.code).toBe('NO_MODEL_SERVICE')
    expect(modelChoiceUsage(new Error('other'))).toBeUndefined()
  })
})
