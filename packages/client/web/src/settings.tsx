// The missing-API-key notice and a small Settings dialog that stores a key through the host
// (`credentials.set`, loopback only). The key's value never comes back to the page.
import { useState } from 'react'
import type { Context } from 'cordis'
import { Store, useCtx, useStore, useT } from '@dsh/client-runtime'
import { credentialsDescribe, credentialsSet } from '@dsh/api-settings/contract'
import { NS } from './messages.ts'
import { Dialog } from './dialog.tsx'
import { useShell } from './state.ts'

export interface MissingKey {
  provider: string
  name: string
}

/** The credential the default provider needs and lacks, when it does. */
export const keyState = new Store<MissingKey | undefined>(undefined)

export async function checkKey(ctx: Context): Promise<void> {
  try {
    const { default: model } = await ctx.remote.call('llm.providers', {})
    if (!model) return keyState.set(undefined)
    const prefix = model.provider.split(/[-_]/)[0].toUpperCase()
    const { credentials } = await ctx.remote.call(credentialsDescribe, {})
    const wanted = credentials.find((c) => c.name.toUpperCase().startsWith(prefix))
    keyState.set(wanted && !wanted.configured ? { provider: model.provider, name: wanted.name } : undefined)
  } catch {
    // no settings row, or a remote browser: nothing to say
  }
}

export function useMissingKey(): MissingKey | undefined {
  return useStore(keyState)
}

export function KeyNotice({ missing }: { missing: MissingKey }) {
  const t = useT(NS)
  const shell = useShell()
  return (
    <div className="notice" role="alert" data-testid="missing-key">
      <p>
        {t('missingKey', { provider: missing.provider })} {t('missingKeyHow', { name: missing.name })}
      </p>
      <button type="button" className="primary" onClick={() => shell.openDialog('settings')}>
        {t('openSettings')}
      </button>
    </div>
  )
}

export function SettingsDialog({ onClose }: { onClose: () => void }) {
  const ctx = useCtx()
  const t = useT(NS)
  const missing = useMissingKey()
  const [name] = useState(() => missing?.name ?? 'DEEPSEEK_API_KEY')
  const [value, setValue] = useState('')
  const [status, setStatus] = useState<string>()
  const save = async () => {
    try {
      await ctx.remote.call(credentialsSet, { name, value })
      setValue('')
      setStatus(t('saved'))
      await checkKey(ctx)
    } catch (error) {
      const e = error as { code?: string; message: string }
      setStatus(e.code === 'FORBIDDEN' ? t('keyOnlyLocal') : e.message)
    }
  }
  return (
    <Dialog title={t('settings')} onClose={onClose}>
      <form
        className="settings-form"
        onSubmit={(e) => {
          e.preventDefault()
          if (value.trim()) void save()
        }}
      >
        <label>
          {t('apiKey', { name })}
          <input type="password" autoComplete="off" value={value} onChange={(e) => setValue(e.target.value)} />
        </label>
        <button type="submit" className="primary" disabled={!value.trim()}>
          {t('save')}
        </button>
        {status ? <p role="status">{status}</p> : null}
      </form>
    </Dialog>
  )
}
