// First run in a terminal without a model key: before the UI starts, ask which provider to use and
// for its key (typed without echo), check the key by listing the provider's models, and store it
// through the credentials seam (`ctx.credentials.set`: @dsh/credentials-local writes
// $DSH_HOME/.credentials.yaml with mode 0600). Only providers whose route is registered on
// `ctx.llm` are offered. Nothing runs when any offered provider already has its key.
import type { Context } from 'cordis'
import type {} from '@dsh/credentials'

/** A provider this onboarding knows how to check: its key variable and how to list its models. */
export interface OnboardingProvider {
  /** The `ctx.llm` route that uses the key. */
  route: string
  label: string
  credential: string
  /** The API root whose `GET /models` proves the key. */
  baseURL(env: NodeJS.ProcessEnv): string
  headers(key: string): Record<string, string>
}

export const ONBOARDING_PROVIDERS: readonly OnboardingProvider[] = [
  {
    route: 'deepseek-official',
    label: 'DeepSeek',
    credential: 'DEEPSEEK_API_KEY',
    baseURL: (env) => env.DEEPSEEK_BASE_URL || 'https://api.deepseek.com',
    headers: (key) => ({ authorization: `Bearer ${key}` }),
  },
  {
    route: 'openai',
    label: 'OpenAI',
    credential: 'OPENAI_API_KEY',
    baseURL: () => 'https://api.openai.com/v1',
    headers: (key) => ({ authorization: `Bearer ${key}` }),
  },
  {
    route: 'anthropic',
    label: 'Anthropic',
    credential: 'ANTHROPIC_API_KEY',
    baseURL: () => 'https://api.anthropic.com/v1',
    headers: (key) => ({ 'x-api-key': key, 'anthropic-version': '2023-06-01' }),
  },
]

/** The terminal the questions go through (process.stdin/stdout; a test may pass its own). */
export interface OnboardingIo {
  input: NodeJS.ReadStream
  output: NodeJS.WriteStream
  env: NodeJS.ProcessEnv
  /** Per key check (default 10 s). */
  timeoutMs?: number
}

export type KeyCheck = { ok: true; models: number } | { ok: false; refused: boolean; why: string }

/** Lists the provider's models with `key`: HTTP 200 proves it, 401/403 refuse it. */
export async function checkKey(
  provider: OnboardingProvider,
  key: string,
  env: NodeJS.ProcessEnv,
  timeoutMs = 10_000,
): Promise<KeyCheck> {
  const url = `${provider.baseURL(env).replace(/\/+$/, '')}/models`
  try {
    const res = await fetch(url, { headers: provider.headers(key), signal: AbortSignal.timeout(timeoutMs) })
    const body = (await res.json().catch(() => undefined)) as { data?: unknown[] } | undefined
    if (res.ok) return { ok: true, models: Array.isArray(body?.data) ? body.data.length : 0 }
    if (res.status === 401 || res.status === 403)
      return { ok: false, refused: true, why: `the key was refused (HTTP ${res.status})` }
    return { ok: false, refused: false, why: `GET ${url} answered HTTP ${res.status}` }
  } catch (error) {
    const e = error as Error & { cause?: { code?: string } }
    const why = e.name === 'TimeoutError' ? `no answer within ${timeoutMs} ms` : (e.cause?.code ?? e.message)
    return { ok: false, refused: false, why: `cannot reach ${url} (${why})` }
  }
}

/** Reads one line; `hidden` echoes nothing (a key). Resolves undefined on Ctrl+C, Ctrl+D or end of input. */
function readLine(io: OnboardingIo, hidden: boolean): Promise<string | undefined> {
  const { input, output } = io
  return new Promise((resolve) => {
    let text = ''
    const raw = input.isTTY === true
    if (raw) input.setRawMode(true)
    input.resume()
    const done = (value: string | undefined) => {
      input.off('data', onData)
      input.off('end', onEnd)
      if (raw) input.setRawMode(false)
      input.pause()
      output.write('\n')
      resolve(value)
    }
    const onEnd = () => done(undefined)
    const onData = (chunk: Buffer | string) => {
      for (const ch of String(chunk)) {
        if (ch === '\u0003' || ch === '\u0004') return done(undefined)
        if (ch === '\r' || ch === '\n') return done(text)
        if (ch === '\u007f' || ch === '\b') {
          if (text.length) {
            text = text.slice(0, -1)
            if (!hidden) output.write('\b \b')
          }
          continue
        }
        // Escape sequences (arrows) and other controls are not part of a key or a number.
        if (ch < ' ') continue
        text += ch
        if (!hidden) output.write(ch)
      }
    }
    input.on('data', onData)
    input.on('end', onEnd)
  })
}

/**
 * Runs the first-run questions when no offered provider has a key. Resolves the route to use
 * (undefined when nothing was needed), or `false` when the person quit (Ctrl+C / Ctrl+D).
 */
export async function onboard(ctx: Context, io: OnboardingIo): Promise<string | undefined | false> {
  const credentials = ctx.get('credentials')
  if (!credentials) return undefined
  const routes = new Set(ctx.llm.listProviders())
  const offered = ONBOARDING_PROVIDERS.filter((p) => routes.has(p.route))
  if (!offered.length) return undefined
  for (const p of offered) if ((await credentials.describe(p.credential)).configured) return undefined

  const say = (text: string) => void io.output.write(text)
  say('\nWelcome to dsh. No model API key is set yet; let us set one up (Ctrl+C quits).\n\n')
  offered.forEach((p, i) => {
    say(`  ${i + 1}) ${p.label} (${p.credential})\n`)
  })
  let provider: OnboardingProvider | undefined
  while (!provider) {
    say(`\nProvider [1-${offered.length}, default 1]: `)
    const answer = await readLine(io, false)
    if (answer === undefined) return false
    const n = answer.trim() === '' ? 1 : Number(answer.trim())
    provider = Number.isInteger(n) && n >= 1 && n <= offered.length ? offered[n - 1] : undefined
    if (!provider) say(`Type a number from 1 to ${offered.length}.\n`)
  }
  for (;;) {
    say(`${provider.label} API key (not shown as you type): `)
    const key = (await readLine(io, true))?.trim()
    if (key === undefined) return false
    if (key === '') {
      say('The key is empty.\n')
      continue
    }
    say(`Checking the key: listing the models of ${provider.baseURL(io.env)} ...\n`)
    const check = await checkKey(provider, key, io.env, io.timeoutMs)
    if (!check.ok && check.refused) {
      say(`${check.why}; try again.\n`)
      continue
    }
    if (!check.ok) {
      say(`${check.why}. Save the key anyway? [y/N]: `)
      const answer = await readLine(io, false)
      if (answer === undefined) return false
      if (!/^y(es)?$/i.test(answer.trim())) continue
    } else say(`The key works (${check.models} models listed).\n`)
    await credentials.set(provider.credential, key)
    const where = (await credentials.describe(provider.credential)).source?.label ?? "dsh's credentials file"
    say(`Saved ${provider.credential} to ${where} (mode 0600). "dsh doctor" shows where keys come from.\n\n`)
    return provider.route
  }
}
