// What one server offers besides tools, as last listed: its prompts, resources and resource
// templates. Kept while the server restarts (like its tools), emptied when it is removed.
import type { Prompt, Resource, ResourceTemplate } from '@modelcontextprotocol/sdk/types.js'
import type { Client } from './sdk.ts'

export type CatalogKind = 'prompts' | 'resources'

export interface CatalogSnapshot {
  prompts: Prompt[]
  resources: Resource[]
  templates: ResourceTemplate[]
}

/** Every page of a paginated listing; a cursor seen twice ends it. */
async function pages<T>(
  read: (cursor: string | undefined) => Promise<{ nextCursor?: string } & Record<string, unknown>>,
  field: string,
): Promise<T[]> {
  const out: T[] = []
  const seen = new Set<string>()
  let cursor: string | undefined
  do {
    const page = await read(cursor)
    out.push(...((page[field] as T[] | undefined) ?? []))
    cursor = page.nextCursor
    if (cursor !== undefined && seen.has(cursor)) break
    if (cursor !== undefined) seen.add(cursor)
  } while (cursor)
  return out
}

export class ServerCatalog {
  private prompts: Prompt[] = []
  private resources: Resource[] = []
  private templates: ResourceTemplate[] = []

  snapshot(): CatalogSnapshot {
    return { prompts: [...this.prompts], resources: [...this.resources], templates: [...this.templates] }
  }

  clear(): void {
    this.prompts = []
    this.resources = []
    this.templates = []
  }

  /**
   * Lists every page of the server's prompts, or of its resources and templates, when its
   * capabilities offer them. Rejects when a listing fails (the caller logs it: prompts and
   * resources are extras, the server's tools still load); a failed template listing is empty.
   */
  async list(client: Client, kind: CatalogKind, timeout: number): Promise<void> {
    const capabilities = client.getServerCapabilities()
    const params = (cursor: string | undefined) => (cursor ? { cursor } : undefined)
    if (kind === 'prompts') {
      this.prompts = capabilities?.prompts
        ? await pages<Prompt>((c) => client.listPrompts(params(c), { timeout }), 'prompts')
        : []
    } else if (capabilities?.resources) {
      this.resources = await pages<Resource>((c) => client.listResources(params(c), { timeout }), 'resources')
      this.templates = await pages<ResourceTemplate>(
        (c) => client.listResourceTemplates(params(c), { timeout }),
        'resourceTemplates',
      ).catch(() => [])
    } else {
      this.resources = []
      this.templates = []
    }
  }
}
