// The choice of model: what the user typed and the profile default, turned into the selection an
// agent runs with. Each face keeps its own error shape (UsageError, ApiError, RpcError) and maps the
// kit's coded errors onto it.
import type { ModelSelection } from '@dsh/agent'
import type { LlmService, ReasoningEffort } from '@dsh/llm'
import { CodedError } from '@dsh/brand'

/** Why a model could not be chosen. */
export type ModelChoiceCode = 'NO_DEFAULT_MODEL' | 'NO_MODEL_SERVICE' | 'UNKNOWN_MODEL'

/**
 * A model that could not be chosen. `detail` is the model service's own sentence (it names the
 * registered routes or models) for `UNKNOWN_MODEL`; faces build their message from code and detail.
 */
export class ModelChoiceError extends CodedError<ModelChoiceCode> {
  override name = 'ModelChoiceError'
  constructor(
    code: ModelChoiceCode,
    readonly spec: string | undefined,
    readonly detail: string,
  ) {
    super(code, detail)
  }
}

/**
 * The model a face runs with, from what the user typed (`MODEL` or `PROVIDER/MODEL`, or nothing)
 * and the profile's default (the agent-default-model row):
 * - nothing typed: the default, or `NO_DEFAULT_MODEL` when there is none;
 * - typed: resolved against the registered routes (a bare model uses the default's provider);
 *   `NO_MODEL_SERVICE` without `ctx.llm`, `UNKNOWN_MODEL` with the service's sentence otherwise.
 * When the chosen provider is the default's, the default's other settings (maxTokens, effort)
 * carry over; `effort` given here wins over both.
 */
export async function chooseModel(
  llm: Pick<LlmService, 'resolveModelSpec'> | undefined,
  spec: string | undefined,
  fallback: ModelSelection | undefined,
  effort?: ReasoningEffort,
): Promise<ModelSelection> {
  const withEffort = (m: ModelSelection): ModelSelection =>
    effort !== undefined ? { ...m, reasoningEffort: effort } : m
  if (spec === undefined) {
    if (!fallback) throw new ModelChoiceError('NO_DEFAULT_MODEL', undefined, 'no default model is configured')
    return withEffort(fallback)
  }
  if (!llm) throw new ModelChoiceError('NO_MODEL_SERVICE', spec, 'no model service is mounted')
  let resolved: { provider: string; model: string }
  try {
    resolved = await llm.resolveModelSpec(spec, fallback?.provider)
  } catch (error) {
    throw new ModelChoiceError('UNKNOWN_MODEL', spec, (error as Error).message)
  }
  const { provider, model } = resolved
  return withEffort({ ...(fallback?.provider === provider ? fallback : {}), provider, model })
}

/**
 * The command-line sentence for a model that could not be chosen (`dsh -p` and the TUI share it);
 * undefined for any other error, which the caller rethrows.
 */
export function modelChoiceUsage(error: unknown): string | undefined {
  if (!(error instanceof ModelChoiceError)) return undefined
  if (error.code === 'NO_DEFAULT_MODEL')
    return 'no model configured: pass --model PROVIDER/MODEL or add the agent-default-model row'
  return `--model ${error.spec}: ${error.detail}`
}
