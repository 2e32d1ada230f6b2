// MemoryStorage: a `ctx.storage` provider that keeps domains in process memory (tests, ephemeral hosts).
import type { Context } from 'cordis'
import Schema from 'schemastery'
import { StorageService, type DomainWrite, type LoadedDomain } from './service.ts'

export class MemoryStorage extends StorageService {
  static Config = Schema.object({})

  private readonly media = { domains: new Map<string, Map<string, unknown>>() }

  constructor(ctx: Context, _config?: object) {
    super(ctx)
  }

  location(domain: string): string {
    return `memory#${domain}`
  }

  protected async loadDomain(domain: string): Promise<LoadedDomain> {
    return { entries: new Map(this.media.domains.get(domain)) }
  }

  protected async writeDomain(domain: string, write: DomainWrite): Promise<void> {
    this.media.domains.set(domain, new Map(write.snapshot))
  }
}
