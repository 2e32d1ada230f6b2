// Models: every provider a key can be set for (the key goes in and never comes back), the
// OpenAI-compatible endpoints declared here, model discovery and the default model.
import { useState } from 'react'
import { useCtx, type Translate } from '@dsh/client-runtime'
import {
  modelsAddEndpoint,
  modelsCatalog,
  modelsDiscover,
  modelsForgetKey,
  modelsRemoveProvider,
  modelsSetKey,
  type WireProvider,
} from '@dsh/api-models/contract'
import { credentialsDescribe, settingsUpdate, type WireCredential } from '@dsh/api-settings/contract'
import type { Context } from 'cordis'
import { failure as hostFailure, useSettingsT } from './names.ts'
import { useLoaded } from './loaded.tsx'

/** A plain sentence made here (a listing that timed out or failed) stands as is; a host error is framed. */
const failure = (e: unknown, t: Translate) =>
  (e as { plain?: boolean })?.plain ? (e as Error).message : hostFailure(e, t)
const plain = (message: string, field?: string) => Object.assign(new Error(message), { plain: true, field })

/** How long a model listing may take before the page gives up and says so. */
export const DISCOVER_TIMEOUT_MS = 3000

/**
 * `models.discover` with a deadline: an endpoint that accepts the connection and never answers
 * (a wrong port, a stopped tunnel) is reported after DISCOVER_TIMEOUT_MS in a plain sentence
 * instead of after the host's own, longer probe timeout. Other failures name the target too.
 */
async function discoverModels(
  ctx: Context,
  params: { provider?: string; baseURL?: string; apiKey?: string },
  target: string,
  t: Translate,
): Promise<string[]> {
  const signal = AbortSignal.timeout(DISCOVER_TIMEOUT_MS)
  try {
    return (await ctx.remote.call(modelsDiscover, params, { signal })).models
  } catch (e) {
    if (signal.aborted) throw plain(t('discoverTimeout', { target, seconds: DISCOVER_TIMEOUT_MS / 1000 }))
    const err = e as { code?: string; message?: string; field?: string }
    if (err.code === 'DISCOVERY_FAILED')
      throw plain(
        t('discoverUnreachable', { target, message: (err.message ?? '').replace(/^models\.discover:\s*/, '') }),
        err.field,
      )
    throw e
  }
}

/** Which layer's key is used (never the key), and the layers whose key is shadowed by it. */
function KeySource({ credential, t }: { credential: WireCredential; t: Translate }) {
  if (!credential.configured || !credential.source) return null
  const where = (id: string) => {
    const layer = credential.layers.find((l) => l.id === id)
    return layer?.path ?? layer?.label ?? id
  }
  const used =
    credential.source === 'env'
      ? t('keyFromEnv', { name: credential.name })
      : t('keyFromLayer', { where: where(credential.source) })
  const also = credential.shadowed.length ? t('keyAlsoIn', { where: credential.shadowed.map(where).join(', ') }) : ''
  return (
    <p
      className="dsh-settings-muted"
      data-testid="key-source"
      data-source={credential.source}
      data-shadowed={credential.shadowed.join(' ') || undefined}
    >
      {also ? `${used} ${also}` : used}
    </p>
  )
}

type Status = { ok: boolean; text: string } | undefined
// `aria-busy` stays true while the action that owns the line (a key save and the model listing
// that follows it) is still running, so assistive technology and tests read the final text.
const StatusLine = ({ status, testid, busy }: { status: Status; testid?: string; busy?: boolean }) =>
  status ? (
    <p
      className={status.ok ? 'dsh-settings-ok' : 'dsh-settings-error'}
      role={status.ok ? 'status' : 'alert'}
      aria-busy={busy ? 'true' : 'false'}
      data-testid={testid}
    >
      {status.text}
    </p>
  ) : null

export default function ModelsPage() {
  const t = useSettingsT()
  const [filter, setFilter] = useState('')
  const [showAll, setShowAll] = useState(false)
  // The catalog, then where each provider's key comes from (never the key): the environment,
  // the credentials file, ... A reload after a change lets only its newest answer set the list,
  // so an older answer arriving late (a reload started before a key was forgotten) cannot bring
  // back what was removed.
  const listing = useLoaded(async (ctx) => {
    const { providers } = await ctx.remote.call(modelsCatalog, {})
    const names = [...new Set(providers.flatMap((p) => (p.keyName ? [p.keyName] : [])))]
    const credentials = await ctx.remote.call(credentialsDescribe, { names }).then(
      (d) => new Map(d.credentials.map((c) => [c.name, c] as const)),
      () => new Map<string, WireCredential>(),
    )
    return { providers, credentials }
  }, 'provider-catalog')
  if (listing.placeholder) return listing.placeholder
  const { providers, credentials } = listing.value
  const reload = listing.reload
  // DeepSeek, declared endpoints and set-up providers first; the rest behind a filter.
  const main = providers.filter((p) => p.kind !== 'pi-ai' || p.routed || p.keyConfigured)
  const rest = providers.filter((p) => !main.includes(p))
  const needle = filter.trim().toLowerCase()
  const shown = needle
    ? rest.filter((p) => p.id.includes(needle) || p.label.toLowerCase().includes(needle))
    : showAll
      ? rest
      : []
  return (
    <div data-testid="settings-models">
      <h3>{t('providers')}</h3>
      <ul className="dsh-settings-list">
        {main.map((p) => (
          <ProviderItem
            key={p.id}
            provider={p}
            credential={p.keyName ? credentials.get(p.keyName) : undefined}
            onChange={reload}
          />
        ))}
      </ul>
      <div className="dsh-settings-row">
        <input
          type="search"
          aria-label={t('filter')}
          placeholder={t('filter')}
          value={filter}
          onChange={(e) => setFilter(e.target.value)}
          data-testid="provider-filter"
        />
        {!needle && !showAll ? (
          <button type="button" onClick={() => setShowAll(true)}>
            {t('showAll', { count: rest.length })}
          </button>
        ) : null}
      </div>
      <ul className="dsh-settings-list">
        {shown.map((p) => (
          <ProviderItem
            key={p.id}
            provider={p}
            credential={p.keyName ? credentials.get(p.keyName) : undefined}
            onChange={reload}
          />
        ))}
      </ul>
      <AddEndpoint onAdded={reload} />
    </div>
  )
}

function ProviderItem({
  provider,
  credential,
  onChange,
}: {
  provider: WireProvider
  credential?: WireCredential | undefined
  onChange: () => unknown
}) {
  const ctx = useCtx()
  const t = useSettingsT()
  const [key, setKey] = useState('')
  const [status, setStatus] = useState<Status>()
  const [models, setModels] = useState<string[]>()
  const [busy, setBusy] = useState(false)
  const saveKey = async () => {
    // The value leaves the page as it is sent, accepted or not.
    const value = key
    setKey('')
    setBusy(true)
    try {
      const r = await ctx.remote.call(modelsSetKey, { provider: provider.id, value })
      const saved = r.verified ? t('keySaved') : t('keySavedUnverified', { note: r.note ?? '' })
      setStatus({ ok: true, text: saved })
      await onChange()
      // The key changed: list the models it gives access to now, without a reload.
      setStatus({ ok: true, text: `${saved} ${t('listingModels')}` })
      try {
        setModels(await discoverModels(ctx, { provider: provider.id }, provider.label, t))
        setStatus({ ok: true, text: saved })
      } catch (e) {
        setModels(undefined)
        setStatus({ ok: false, text: `${saved} ${failure(e, t)}` })
      }
    } catch (e) {
      const err = e as { code?: string; message?: string }
      setStatus({
        ok: false,
        text: err.code === 'KEY_REJECTED' ? t('keyRejected', { message: err.message ?? '' }) : failure(e, t),
      })
    } finally {
      setBusy(false)
    }
  }
  const discover = async () => {
    setBusy(true)
    try {
      setModels(await discoverModels(ctx, { provider: provider.id }, provider.label, t))
      setStatus(undefined)
    } catch (e) {
      setStatus({ ok: false, text: failure(e, t) })
    } finally {
      setBusy(false)
    }
  }
  const chooseDefault = async (model: string) => {
    try {
      await ctx.remote.call(settingsUpdate, { namespace: 'model', patch: { provider: provider.id, model } })
      setStatus({ ok: true, text: `${t('saved')} ${t('defaultModel')}: ${provider.id}/${model}` })
    } catch (e) {
      setStatus({ ok: false, text: failure(e, t) })
    }
  }
  const forget = async () => {
    try {
      await ctx.remote.call(modelsForgetKey, { provider: provider.id })
      setModels(undefined)
      setStatus({ ok: true, text: t('keyForgotten') })
      await onChange()
    } catch (e) {
      setStatus({ ok: false, text: failure(e, t) })
    }
  }
  const remove = async () => {
    try {
      await ctx.remote.call(modelsRemoveProvider, { name: provider.id })
      await onChange()
    } catch (e) {
      setStatus({ ok: false, text: failure(e, t) })
    }
  }
  const listed = models ?? (provider.kind === 'openai-compatible' ? provider.models : undefined)
  return (
    <li className="dsh-settings-item" data-provider={provider.id}>
      <header>
        <strong>{provider.label}</strong>
        {provider.label !== provider.id ? <code className="dsh-settings-muted">{provider.id}</code> : null}
        {provider.keyName ? (
          <span className={'dsh-badge ' + (provider.keyConfigured ? 'ok' : 'warn')} data-testid="key-badge">
            {provider.keyConfigured ? t('keySet') : t('keyMissing')}
          </span>
        ) : (
          <span className="dsh-badge ok">{t('keyless')}</span>
        )}
        <span className={'dsh-badge ' + (provider.routed ? 'ok' : 'warn')}>
          {provider.routed ? t('routed') : t('notRouted')}
        </span>
        {provider.baseURL ? <span className="dsh-settings-muted">{provider.baseURL}</span> : null}
      </header>
      {credential ? <KeySource credential={credential} t={t} /> : null}
      {provider.keyName ? (
        <form
          className="dsh-settings-row"
          onSubmit={(e) => {
            e.preventDefault()
            if (key.trim()) void saveKey()
          }}
        >
          <input
            type="password"
            autoComplete="off"
            aria-label={t('pasteKey', { name: provider.keyName })}
            placeholder={t('pasteKey', { name: provider.keyName })}
            value={key}
            onChange={(e) => setKey(e.target.value)}
            data-testid="key-input"
          />
          <button type="submit" className="primary" disabled={!key.trim() || busy} data-testid="key-save">
            {t('setKey')}
          </button>
          {provider.keyConfigured ? (
            <button type="button" disabled={busy} onClick={() => void forget()} data-testid="key-forget">
              {t('forgetKey')}
            </button>
          ) : null}
        </form>
      ) : null}
      <div className="dsh-settings-row">
        <button type="button" disabled={busy} onClick={() => void discover()} data-testid="discover">
          {t('discover')}
        </button>
        {provider.managed && provider.kind === 'openai-compatible' ? (
          <button type="button" onClick={() => void remove()}>
            {t('remove')}
          </button>
        ) : null}
      </div>
      {models ? <p className="dsh-settings-muted">{t('discovered', { count: models.length, list: '' })}</p> : null}
      {listed?.length ? (
        <ul className="dsh-settings-list" data-testid="provider-models">
          {listed.map((m) => (
            <li key={m} className="dsh-settings-row">
              <code>{m}</code>
              {provider.routed ? (
                <button type="button" onClick={() => void chooseDefault(m)} data-model={m}>
                  {t('useAsDefault')}
                </button>
              ) : null}
            </li>
          ))}
        </ul>
      ) : null}
      <StatusLine status={status} busy={busy} testid="provider-status" />
    </li>
  )
}

function AddEndpoint({ onAdded }: { onAdded: () => unknown }) {
  const ctx = useCtx()
  const t = useSettingsT()
  const [name, setName] = useState('')
  const [baseURL, setBaseURL] = useState('')
  const [apiKey, setApiKey] = useState('')
  const [models, setModels] = useState('')
  const [status, setStatus] = useState<Status>()
  const [field, setField] = useState<string>()
  const ids = models
    .split(/[\s,]+/)
    .map((m) => m.trim())
    .filter(Boolean)
  const discover = async () => {
    try {
      setField(undefined)
      setStatus({ ok: true, text: t('listingModels') })
      const found = await discoverModels(ctx, { baseURL, ...(apiKey ? { apiKey } : {}) }, baseURL.trim(), t)
      setModels(found.join(', '))
      setStatus({ ok: true, text: t('discovered', { count: found.length, list: found.slice(0, 8).join(', ') }) })
    } catch (e) {
      setField((e as { field?: string }).field)
      setStatus({ ok: false, text: failure(e, t) })
    }
  }
  const add = async () => {
    setField(undefined)
    try {
      await ctx.remote.call(modelsAddEndpoint, {
        name: name.trim(),
        baseURL: baseURL.trim(),
        ...(apiKey.trim() ? { apiKey: apiKey.trim() } : {}),
        models: ids.map((id) => ({ id })),
      })
      setStatus({ ok: true, text: t('added', { name }) })
      setName('')
      setBaseURL('')
      setModels('')
      await onAdded()
    } catch (e) {
      setField((e as { field?: string }).field)
      setStatus({ ok: false, text: failure(e, t) })
    } finally {
      setApiKey('')
    }
  }
  const invalid = (f: string) => (field && (field === f || field.startsWith(f)) ? true : undefined)
  return (
    <form
      className="dsh-settings-form"
      data-testid="add-endpoint"
      onSubmit={(e) => {
        e.preventDefault()
        void add()
      }}
    >
      <h3>{t('addEndpoint')}</h3>
      <div className="dsh-settings-row">
        <label className="dsh-field" data-invalid={invalid('name')}>
          {t('endpointName')}
          <input value={name} onChange={(e) => setName(e.target.value)} name="name" />
        </label>
        <label className="dsh-field" data-invalid={invalid('baseURL')}>
          {t('endpointURL')}
          <input
            value={baseURL}
            onChange={(e) => setBaseURL(e.target.value)}
            name="baseURL"
            placeholder="http://127.0.0.1:11434/v1"
          />
        </label>
        <label className="dsh-field">
          {t('endpointKey')}
          <input
            type="password"
            autoComplete="off"
            value={apiKey}
            onChange={(e) => setApiKey(e.target.value)}
            name="apiKey"
          />
        </label>
      </div>
      <div className="dsh-settings-row">
        <label className="dsh-field" data-invalid={invalid('models')}>
          {t('endpointModels')}
          <input value={models} onChange={(e) => setModels(e.target.value)} name="models" size={40} />
        </label>
        <button type="button" disabled={!baseURL.trim()} onClick={() => void discover()}>
          {t('discover')}
        </button>
        <button type="submit" className="primary" disabled={!name.trim() || !baseURL.trim() || !ids.length}>
          {t('add')}
        </button>
      </div>
      <StatusLine status={status} testid="endpoint-status" />
    </form>
  )
}
