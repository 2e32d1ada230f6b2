// The `Translate` the composer gets in the page: the runtime's locale service with the composer's
// dictionaries registered under a namespace and bound to it (@dsh/ui-conversation does the same
// with its `conversation` namespace, which spreads these messages in), in English.
import { Context } from 'cordis'
import { Locale } from '@dsh/client-runtime'
import { en, zh } from '../src/strings.ts'

const locale = new Locale(new Context(), { lang: 'en' })
locale.register('conversation', { en, zh })

export const t = locale.bind('conversation')
