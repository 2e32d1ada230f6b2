// `ctx.theme`: light, dark or system (follows prefers-color-scheme). The resolved scheme is set on
// <html> as `data-theme` and `color-scheme`; stylesheets key their colours on it.
import { type Context, Service } from 'cordis'
import { Store } from '@dsh/client-connection'

export type ThemePreference = 'light' | 'dark' | 'system'
export type ColorScheme = 'light' | 'dark'

declare module 'cordis' {
  interface Context {
    theme: Theme
  }
}

const STORAGE_KEY = 'dsh.theme'

export class Theme extends Service {
  readonly preference: Store<ThemePreference>
  readonly resolved: Store<ColorScheme>
  private readonly media?: MediaQueryList

  constructor(ctx: Context) {
    super(ctx, 'theme')
    let stored: string | null = null
    try {
      stored = globalThis.localStorage?.getItem(STORAGE_KEY) ?? null
    } catch {
      // no storage
    }
    this.preference = new Store<ThemePreference>(
      stored === 'light' || stored === 'dark' || stored === 'system' ? stored : 'system',
    )
    this.media = globalThis.matchMedia?.('(prefers-color-scheme: dark)')
    this.resolved = new Store<ColorScheme>(this.resolve())
    this.apply()
    const onMedia = () => {
      this.resolved.set(this.resolve())
      this.apply()
    }
    ctx.effect(() => {
      this.media?.addEventListener?.('change', onMedia)
      return () => this.media?.removeEventListener?.('change', onMedia)
    }, 'theme: follow the system scheme')
  }

  set(preference: ThemePreference): void {
    if (!['light', 'dark', 'system'].includes(preference))
      throw new TypeError(`theme.set: unknown theme ${JSON.stringify(preference)} (light, dark or system)`)
    try {
      globalThis.localStorage?.setItem(STORAGE_KEY, preference)
    } catch {
      // no storage
    }
    this.preference.set(preference)
    this.resolved.set(this.resolve())
    this.apply()
  }

  private resolve(): ColorScheme {
    const p = this.preference.get()
    if (p !== 'system') return p
    return this.media?.matches ? 'dark' : 'light'
  }

  private apply(): void {
    const root = globalThis.document?.documentElement
    if (!root) return
    root.dataset.theme = this.resolved.get()
    root.style.colorScheme = this.resolved.get()
  }
}
