import type { Context } from 'cordis'
import type Schema from 'schemastery'

export interface HelloConfig {
  greeting: string
  punctuation: '!' | '.'
}
export declare const name: 'dsh-plugin-hello'
export declare const inject: ['tools']
export declare const Config: Schema<Partial<HelloConfig>, HelloConfig>
export declare function apply(ctx: Context, config: HelloConfig): void
