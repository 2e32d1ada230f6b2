// `ctx.locale`: the page language (`en` or `zh`) and the dictionaries plugins register per
// namespace. The choice is kept in localStorage; without one the browser's languages decide.
import { type Context, Service } from 'cordis'
import { Store } from '@dsh/client-connection'

export type Lang = 'en' | 'zh'
export const LANGS: readonly Lang[] = ['en', 'zh']

/** Messages of one namespace: key -> text with `{name}` placeholders. */
export type Messages = Record<string, string>
export interface Dictionary {
  en: Messages
  zh?: Messages
}

export type Translate = (key: string, vars?: Record<string, string | number>) => string

declare module 'cordis' {
  interface Context {
    locale: Locale
  }
}

const STORAGE_KEY = 'dsh.locale'

/** The first of the browser's languages we ship, by primary subtag; `en` when none matches. */
export function pickLang(languages: readonly string[] | undefined): Lang {
  for (const tag of languages ?? []) {
    const primary = tag.toLowerCase().split('-')[0]
    if ((LANGS as readonly string[]).includes(primary)) return primary as Lang
  }
  return 'en'
}

function storedLang(): Lang | undefined {
  try {
    const value = globalThis.localStorage?.getItem(STORAGE_KEY)
    return value === 'en' || value === 'zh' ? value : undefined
  } catch {
    return undefined
  }
}

export interface LocaleConfig {
  /** Force a language (tests, embedding); default: stored choice, then the browser's. */
  lang?: Lang
}

export class Locale extends Service {
  readonly current: Store<Lang>
  private readonly dictionaries = new Map<string, Dictionary[]>()
  /** Bumped when a dictionary is added or removed (for re-rendering). */
  readonly revision = new Store(0)

  constructor(ctx: Context, config: LocaleConfig = {}) {
    super(ctx, 'locale')
    this.current = new Store<Lang>(config.lang ?? storedLang() ?? pickLang(globalThis.navigator?.languages))
    this.applyDocument()
  }

  get lang(): Lang {
    return this.current.get()
  }

  /** Switches the language and remembers the choice. */
  set(lang: Lang): void {
    if (!LANGS.includes(lang))
      throw new TypeError(`locale.set: unknown language ${JSON.stringify(lang)} (expected ${LANGS.join(' or ')})`)
    try {
      globalThis.localStorage?.setItem(STORAGE_KEY, lang)
    } catch {
      // storage refused (private mode): the choice lasts for this page
    }
    this.current.set(lang)
    this.applyDocument()
  }

  /** Adds a namespace's messages; an effect of the caller. Later registrations of a namespace win per key. */
  register(ns: string, dictionary: Dictionary): () => void {
    if (!ns || typeof ns !== 'string') throw new TypeError('locale.register: namespace must be a non-empty string')
    if (!dictionary || typeof dictionary.en !== 'object')
      throw new TypeError(`locale.register(${ns}): a dictionary needs at least its en messages`)
    const dispose = this.ctx.effect(() => {
      const list = this.dictionaries.get(ns) ?? []
      list.push(dictionary)
      this.dictionaries.set(ns, list)
      this.revision.update((n) => n + 1)
      return () => {
        const current = this.dictionaries.get(ns) ?? []
        this.dictionaries.set(
          ns,
          current.filter((d) => d !== dictionary),
        )
        this.revision.update((n) => n + 1)
      }
    }, `locale:${ns}`)
    return () => void dispose()
  }

  /** Looks `ns.key` up in the current language, then English, then gives the key itself. */
  t(ns: string, key: string, vars?: Record<string, string | number>, lang: Lang = this.lang): string {
    const list = this.dictionaries.get(ns) ?? []
    let text: string | undefined
    for (let i = list.length - 1; i >= 0 && text === undefined; i--) text = list[i][lang]?.[key]
    for (let i = list.length - 1; i >= 0 && text === undefined; i--) text = list[i].en[key]
    if (text === undefined) text = `${ns}.${key}`
    return vars ? text.replace(/\{(\w+)\}/g, (m, name: string) => (name in vars ? String(vars[name]) : m)) : text
  }

  /** `t` bound to a namespace. */
  bind(ns: string): Translate {
    return (key, vars) => this.t(ns, key, vars)
  }

  private applyDocument(): void {
    const root = globalThis.document?.documentElement
    if (root) root.lang = this.lang === 'zh' ? 'zh-CN' : 'en'
  }
}
