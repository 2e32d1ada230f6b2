// MemorySettings: a provider with no storage, for tests and embedders that persist nothing.
import type { Context } from 'cordis'
import Schema from 'schemastery'
import { mergePatch, type SettingsPatch, type SettingsRecord } from './patch.ts'
import { SettingsService, type SettingsWriteOptions } from './service.ts'

export interface MemorySettingsConfig {
  /** The initial document: namespace -> section. */
  initial: Record<string, SettingsRecord>
}

export class MemorySettings extends SettingsService {
  static Config: Schema<Partial<MemorySettingsConfig>, MemorySettingsConfig> = Schema.object({
    initial: Schema.dict(Schema.dict(Schema.any())).default({}).description('The initial sections, by namespace.'),
  }) as Schema<Partial<MemorySettingsConfig>, MemorySettingsConfig>

  readonly location = 'memory settings'
  // A promise chain so writes apply in call order, like a durable provider's.
  private readonly queue = { tail: Promise.resolve() as Promise<unknown> }

  constructor(ctx: Context, config: Partial<MemorySettingsConfig> = {}) {
    super(ctx)
    this.publish(config.initial ?? {}, 'load')
  }

  private write(
    namespace: string,
    compute: (current: unknown) => SettingsRecord | undefined,
    options?: SettingsWriteOptions,
  ): Promise<void> {
    const run = this.queue.tail.then(() => {
      const next = compute(this.get(namespace))
      options?.validate?.(next)
      const document: Record<string, unknown> = {}
      for (const name of this.namespaces()) document[name] = this.get(name)
      if (next === undefined) delete document[namespace]
      else document[namespace] = next
      this.publish(document, 'update')
    })
    this.queue.tail = run.catch(() => {})
    return run
  }

  async update(namespace: string, patch: SettingsPatch, options?: SettingsWriteOptions): Promise<void> {
    this.checkWrite(namespace, patch, 'patch')
    return this.write(namespace, (current) => mergePatch(current, patch), options)
  }

  async replace(namespace: string, value: SettingsRecord | undefined, options?: SettingsWriteOptions): Promise<void> {
    this.checkWrite(namespace, value, 'value')
    return this.write(namespace, () => (value === undefined ? undefined : structuredClone(value)), options)
  }
}
