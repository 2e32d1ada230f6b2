// Just enough of express's types for this fixture (the package ships none, and @types/express is
// not worth a dependency here): the app, its JSON body parser, and request/response as used.
declare module 'express' {
  import type { IncomingMessage, Server, ServerResponse } from 'node:http'
  export interface Request extends IncomingMessage {
    body?: unknown
  }
  export interface Response extends ServerResponse {
    status(code: number): Response
    set(field: string, value: string): Response
    json(body: unknown): Response
    redirect(status: number, url: string): void
  }
  type Handler = (req: Request, res: Response, next: () => void) => unknown
  export interface Express {
    use(...handlers: unknown[]): Express
    post(path: string, ...handlers: unknown[]): Express
    get(path: string, ...handlers: unknown[]): Express
    delete(path: string, ...handlers: unknown[]): Express
    listen(port: number, host: string, callback: () => void): Server
  }
  interface ExpressFactory {
    (): Express
    json(): Handler
  }
  const express: ExpressFactory
  export default express
}
