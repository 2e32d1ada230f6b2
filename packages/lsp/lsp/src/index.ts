// @dsh/lsp: the language-server seam. `ctx.lsp` answers semantic code questions (definition,
// references, implementations, hover, symbols) and reports a file's diagnostics, over providers
// that each serve some files (by extension). Positions here are LSP's: 0-based lines and UTF-16
// character offsets; the model-facing tool converts. No I/O of its own.
import { type Context, Service } from 'cordis'
import { CodedError } from '@dsh/brand'

export interface Position {
  line: number
  character: number
}

export interface Location {
  /** Absolute file path. */
  path: string
  start: Position
  end: Position
}

export interface SymbolInfo {
  name: string
  /** LSP SymbolKind name, e.g. `Function`, `Class`. */
  kind: string
  location: Location
  /** The enclosing symbol's name, when the server says. */
  container?: string
}

export interface Diagnostic {
  path: string
  start: Position
  end: Position
  severity: 'error' | 'warning' | 'information' | 'hint'
  message: string
  source?: string
  code?: string
}

/** One language server (or group of them) serving some files. */
export interface LspProvider {
  /** Unique id, e.g. the server table key. */
  id: string
  /** Whether this provider serves `path`. */
  handles(path: string): boolean
  definition(path: string, position: Position): Promise<Location[]>
  references(path: string, position: Position): Promise<Location[]>
  implementations(path: string, position: Position): Promise<Location[]>
  hover(path: string, position: Position): Promise<string | undefined>
  documentSymbols(path: string): Promise<SymbolInfo[]>
  workspaceSymbols(query: string, near: string): Promise<SymbolInfo[]>
  /** Tells the server `path` changed on disk and returns its diagnostics once they settle (bounded). */
  diagnostics(path: string): Promise<Diagnostic[]>
}

export class LspError extends CodedError<'NO_SERVER' | 'SERVER_FAILED' | 'TIMEOUT' | 'UNSUPPORTED'> {
  override name = 'LspError'
}

declare module 'cordis' {
  interface Context {
    lsp: LspService
  }
}

export class LspService extends Service {
  private readonly providers: LspProvider[] = []

  constructor(ctx: Context) {
    super(ctx, 'lsp')
  }

  /** Adds a provider; undone by the disposer or when the calling plugin unloads. */
  register(provider: LspProvider): () => void {
    if (this.providers.some((p) => p.id === provider.id))
      throw new TypeError(`lsp.register: provider "${provider.id}" is already registered`)
    const providers = this.providers
    const dispose = this.ctx.effect(() => {
      providers.push(provider)
      return () => {
        const index = providers.indexOf(provider)
        if (index >= 0) providers.splice(index, 1)
      }
    }, `lsp-provider:${provider.id}`)
    return () => void dispose()
  }

  /** The provider serving `path` (the first registered that handles it), if any. */
  providerFor(path: string): LspProvider | undefined {
    return this.providers.find((provider) => provider.handles(path))
  }

  /** Ids of the registered providers. */
  list(): string[] {
    return this.providers.map((p) => p.id)
  }

  private need(path: string): LspProvider {
    const provider = this.providerFor(path)
    if (!provider) throw new LspError('NO_SERVER', `no language server is configured for ${path}`)
    return provider
  }

  async definition(path: string, position: Position): Promise<Location[]> {
    return this.need(path).definition(path, position)
  }

  async references(path: string, position: Position): Promise<Location[]> {
    return this.need(path).references(path, position)
  }

  async implementations(path: string, position: Position): Promise<Location[]> {
    return this.need(path).implementations(path, position)
  }

  async hover(path: string, position: Position): Promise<string | undefined> {
    return this.need(path).hover(path, position)
  }

  async documentSymbols(path: string): Promise<SymbolInfo[]> {
    return this.need(path).documentSymbols(path)
  }

  /** Workspace symbols from the provider serving `near` (a file or directory path used to pick the server). */
  async workspaceSymbols(query: string, near: string): Promise<SymbolInfo[]> {
    return this.need(near).workspaceSymbols(query, near)
  }

  async diagnostics(path: string): Promise<Diagnostic[]> {
    return this.need(path).diagnostics(path)
  }
}

export const name = 'lsp'
export default LspService
