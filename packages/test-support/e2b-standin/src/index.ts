// @dsh/e2b-standin: a local stand-in for the two services the `e2b` SDK talks to, on one loopback
// HTTP server: the control plane (REST: create, connect, list, info, kill, pause, timeout) and the
// in-sandbox daemon envd (Connect-RPC `process.Process` and `filesystem.Filesystem`, plus its
// HTTP `/files` and `/health`). Requests for envd carry the `E2b-Sandbox-Id` header, so one
// server serves every sandbox. Each sandbox is a private root directory; commands run under
// bubblewrap with that directory as `/`, so the "remote" filesystem is not the host's.
import { randomBytes } from 'node:crypto'
import { mkdtempSync, promises as fsp, rmSync, type Stats } from 'node:fs'
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import { tmpdir } from 'node:os'
import { basename, dirname, join } from 'node:path'
import { Code, ConnectError, type ConnectRouter, type HandlerContext } from '@connectrpc/connect'
import { connectNodeAdapter } from '@connectrpc/connect-node'
import { envdSchema } from './descriptors.ts'
import { SANDBOX_HOME, StandinSandbox, exists, type SandboxProcess } from './sandbox.ts'
import { collect, follow, fsError, isRecord, json, parseJson, toEntry } from './envd-helpers.ts'

export { envdSchema } from './descriptors.ts'
export { StandinSandbox } from './sandbox.ts'

/** The envd version the stand-in reports (octet-stream uploads, default user, stdin control). */
export const ENVD_VERSION = '0.5.7'

export interface StandinOptions {
  /** The only API key the control plane accepts (default: a fresh `e2b_<hex>` key). */
  apiKey?: string
  /** Directory holding the sandbox roots (default: a fresh directory under the OS temp dir, removed on close). */
  baseDir?: string
  /** bubblewrap binary (default `bwrap` on PATH). */
  bwrap?: string
  port?: number
}

/** A scripted failure: the next `times` requests matching `method path` answer `status`. */
export interface Fault {
  method: string
  /** A path prefix, e.g. `/sandboxes` or `/process.Process/Start`. */
  path: string
  status: number
  times: number
  message?: string
}

/** A held request (`standin.hold`): it waits, unanswered, until `release()`. */
export interface Hold {
  /** Settles when the first matching request arrives. */
  readonly arrived: Promise<RequestRecord>
  /** Lets the held request (and any later one, since the hold is spent) through. */
  release(): void
}

/** A scripted stream drop (`standin.dropStream`). */
export interface StreamDrop {
  /** Settles when the stream was cut (its connection destroyed), with the `Start` request's record. */
  readonly dropped: Promise<RequestRecord>
}

export interface RequestRecord {
  method: string
  path: string
  status?: number
  sandboxId?: string
}

export interface E2bStandin {
  readonly url: string
  readonly apiKey: string
  /** Environment the `e2b` SDK reads to reach this stand-in. */
  readonly env: Record<string, string>
  readonly requests: RequestRecord[]
  readonly faults: Fault[]
  /** Sandboxes currently known (running or paused). */
  sandboxes(): StandinSandbox[]
  get(id: string): StandinSandbox | undefined
  /** Host directory that is `/` in sandbox `id`. */
  rootOf(id: string): string
  /** Kills a sandbox from outside (as the provider would on expiry): processes die, streams break. */
  kill(id: string): boolean
  /** Holds the next request matching `method` and the path prefix until released (once). */
  hold(method: string, path: string): Hold
  /**
   * Cuts the output stream of the next process started with a command line containing `command`
   * (once), right after its first output message: the connection is destroyed as a network drop
   * would, while the process keeps running in the sandbox.
   */
  dropStream(command: string): StreamDrop
  close(): Promise<void>
}

const TEMPLATE_ALIASES = new Set(['base', 'code-interpreter-v1'])

export async function startE2bStandin(options: StandinOptions = {}): Promise<E2bStandin> {
  const apiKey = options.apiKey ?? `e2b_${randomBytes(20).toString('hex')}`
  const ownBase = options.baseDir === undefined
  const baseDir = options.baseDir ?? mkdtempSync(join(tmpdir(), 'dsh-e2b-standin-'))
  const bwrap = options.bwrap ?? 'bwrap'
  const sandboxes = new Map<string, StandinSandbox>()
  const requests: RequestRecord[] = []
  const faults: Fault[] = []
  const holds: Array<{ method: string; path: string; arrive: (r: RequestRecord) => void; gate: Promise<void> }> = []
  const schema = envdSchema()
  const drops: Array<{ command: string; drop: (record: RequestRecord) => void }> = []
  /** Each open request's response, by the id stamped on it, so a handler can cut its connection. */
  const open = new Map<string, { res: ServerResponse; record: RequestRecord }>()
  let stamp = 0
  /** The scripted drop of a `Start` whose command line contains a drop's text (taken once). */
  const dropFor = (context: HandlerContext, line: string): (() => void) | undefined => {
    const index = drops.findIndex((d) => line.includes(d.command))
    const target = open.get(context.requestHeader.get('x-standin-request') ?? '')
    if (index < 0 || !target) return undefined
    const [drop] = drops.splice(index, 1)
    return () =>
      setImmediate(() => {
        target.res.socket?.destroy()
        drop.drop(target.record)
      })
  }

  const expire = (sandbox: StandinSandbox, timeoutSeconds: number) => {
    if (sandbox.timer) clearTimeout(sandbox.timer)
    sandbox.record.endAt = new Date(Date.now() + timeoutSeconds * 1000)
    sandbox.timer = setTimeout(() => {
      if (sandbox.record.autoPause) pause(sandbox)
      else remove(sandbox.record.id)
    }, timeoutSeconds * 1000)
    sandbox.timer.unref()
  }
  const pause = (sandbox: StandinSandbox) => {
    sandbox.stop()
    sandbox.record.state = 'paused'
  }
  const remove = (id: string): boolean => {
    const sandbox = sandboxes.get(id)
    if (!sandbox) return false
    sandboxes.delete(id)
    sandbox.destroy()
    return true
  }

  // ---- envd: Connect-RPC ----------------------------------------------------------------------

  const sandboxOf = (context: HandlerContext): StandinSandbox => {
    const id = context.requestHeader.get('e2b-sandbox-id') ?? ''
    const sandbox = sandboxes.get(id)
    if (sandbox?.record.state !== 'running') throw new ConnectError(`sandbox ${id} is not running`, Code.Unavailable)
    const token = context.requestHeader.get('x-access-token')
    if (token !== sandbox.record.envdAccessToken) throw new ConnectError('invalid access token', Code.Unauthenticated)
    return sandbox
  }
  const selected = (
    sandbox: StandinSandbox,
    selector: { case?: string; value?: unknown } | undefined,
  ): SandboxProcess => {
    for (const proc of sandbox.processes.values()) {
      if (selector?.case === 'pid' && proc.pid === selector.value) return proc
      if (selector?.case === 'tag' && proc.tag === selector.value) return proc
    }
    throw new ConnectError(`process ${String(selector?.value)} not found`, Code.NotFound)
  }

  const routes = (router: ConnectRouter) => {
    router.service(schema.process, {
      async *start(request: any, context: HandlerContext) {
        const sandbox = sandboxOf(context)
        const config = request.process
        if (!config?.cmd) throw new ConnectError('process.cmd is required', Code.InvalidArgument)
        if (request.pty) throw new ConnectError('the stand-in has no PTY support', Code.Unimplemented)
        const cwd = config.cwd ? sandbox.sandboxPath(config.cwd) : SANDBOX_HOME
        const cwdStat = await fsp.stat(sandbox.hostPath(cwd)).catch(() => undefined)
        if (!cwdStat?.isDirectory()) throw new ConnectError(`cwd '${cwd}' does not exist`, Code.InvalidArgument)
        const proc = sandbox.start(
          { cmd: config.cmd, args: [...config.args], envs: { ...config.envs }, cwd },
          request.stdin === true,
          request.tag || undefined,
        )
        yield* follow(sandbox, proc, context, dropFor(context, [config.cmd, ...config.args].join(' ')))
      },
      async *connect(request: any, context: HandlerContext) {
        const sandbox = sandboxOf(context)
        yield* follow(sandbox, selected(sandbox, request.process?.selector), context)
      },
      async list(_request: any, context: HandlerContext) {
        const sandbox = sandboxOf(context)
        return {
          processes: [...sandbox.processes.values()].map((proc) => ({
            pid: proc.pid,
            ...(proc.tag ? { tag: proc.tag } : {}),
            config: { cmd: proc.config.cmd, args: proc.config.args, envs: proc.config.envs, cwd: proc.config.cwd },
          })),
        }
      },
      async sendSignal(request: any, context: HandlerContext) {
        const proc = selected(sandboxOf(context), request.process?.selector)
        if (request.signal !== 9 && request.signal !== 15)
          throw new ConnectError(`unsupported signal ${request.signal}`, Code.InvalidArgument)
        proc.signal(request.signal === 9 ? 'SIGKILL' : 'SIGTERM')
        return {}
      },
      async sendInput(request: any, context: HandlerContext) {
        const proc = selected(sandboxOf(context), request.process?.selector)
        const input = request.input?.input
        if (!proc.child.stdin) throw new ConnectError('stdin is not enabled for this process', Code.FailedPrecondition)
        if (input?.case === 'stdin') proc.child.stdin.write(input.value)
        return {}
      },
      async streamInput(requests: AsyncIterable<any>, context: HandlerContext) {
        const sandbox = sandboxOf(context)
        let proc: SandboxProcess | undefined
        for await (const request of requests) {
          const event = request.event
          if (event?.case === 'start') proc = selected(sandbox, event.value.process?.selector)
          else if (event?.case === 'data' && proc?.child.stdin && event.value.input?.input?.case === 'stdin')
            proc.child.stdin.write(event.value.input.input.value)
        }
        return {}
      },
      async closeStdin(request: any, context: HandlerContext) {
        const proc = selected(sandboxOf(context), request.process?.selector)
        proc.child.stdin?.end()
        return {}
      },
      async update(_request: any, context: HandlerContext) {
        sandboxOf(context)
        throw new ConnectError('the stand-in has no PTY support', Code.Unimplemented)
      },
    } as never)

    router.service(schema.filesystem, {
      async stat(request: any, context: HandlerContext) {
        const sandbox = sandboxOf(context)
        const path = sandbox.sandboxPath(request.path)
        const host = sandbox.hostPath(path, false)
        try {
          return { entry: await toEntry(sandbox, path, host, await fsp.lstat(host)) }
        } catch (error) {
          throw fsError(error, path)
        }
      },
      async listDir(request: any, context: HandlerContext) {
        const sandbox = sandboxOf(context)
        const path = sandbox.sandboxPath(request.path)
        const depth = Math.max(1, request.depth || 1)
        const entries: unknown[] = []
        const walk = async (dir: string, level: number): Promise<void> => {
          const host = sandbox.hostPath(dir)
          for (const name of (await fsp.readdir(host)).sort()) {
            const child = dir === '/' ? `/${name}` : `${dir}/${name}`
            const stat = await fsp.lstat(join(host, name))
            entries.push(await toEntry(sandbox, child, join(host, name), stat))
            if (stat.isDirectory() && level < depth) await walk(child, level + 1)
          }
        }
        try {
          const stat = await fsp.stat(sandbox.hostPath(path))
          if (!stat.isDirectory()) throw new ConnectError(`path is not a directory: ${path}`, Code.InvalidArgument)
          await walk(path, 1)
        } catch (error) {
          throw error instanceof ConnectError ? error : fsError(error, path)
        }
        return { entries }
      },
      async makeDir(request: any, context: HandlerContext) {
        const sandbox = sandboxOf(context)
        const path = sandbox.sandboxPath(request.path)
        const host = sandbox.hostPath(path)
        if (await exists(host)) throw new ConnectError(`directory already exists: ${path}`, Code.AlreadyExists)
        try {
          await fsp.mkdir(host, { recursive: true })
          return { entry: await toEntry(sandbox, path, host, await fsp.lstat(host)) }
        } catch (error) {
          throw fsError(error, path)
        }
      },
      async move(request: any, context: HandlerContext) {
        const sandbox = sandboxOf(context)
        const source = sandbox.sandboxPath(request.source)
        const destination = sandbox.sandboxPath(request.destination)
        const to = sandbox.hostPath(destination, false)
        try {
          await fsp.mkdir(dirname(to), { recursive: true })
          await fsp.rename(sandbox.hostPath(source, false), to)
          return { entry: await toEntry(sandbox, destination, to, await fsp.lstat(to)) }
        } catch (error) {
          throw fsError(error, source)
        }
      },
      async remove(request: any, context: HandlerContext) {
        const sandbox = sandboxOf(context)
        const path = sandbox.sandboxPath(request.path)
        const host = sandbox.hostPath(path, false)
        if (!(await exists(host))) throw new ConnectError(`path not found: ${path}`, Code.NotFound)
        await fsp.rm(host, { recursive: true, force: true })
        return {}
      },
      // biome-ignore lint/correctness/useYield: a server-streaming handler (Connect wants an async generator) that refuses before its first message
      async *watchDir(_request: any, context: HandlerContext) {
        sandboxOf(context)
        throw new ConnectError('the stand-in does not watch directories', Code.Unimplemented)
      },
      async createWatcher(_request: any, context: HandlerContext) {
        sandboxOf(context)
        throw new ConnectError('the stand-in does not watch directories', Code.Unimplemented)
      },
      async getWatcherEvents(_request: any, context: HandlerContext) {
        sandboxOf(context)
        throw new ConnectError('the stand-in does not watch directories', Code.Unimplemented)
      },
      async removeWatcher(_request: any, context: HandlerContext) {
        sandboxOf(context)
        throw new ConnectError('the stand-in does not watch directories', Code.Unimplemented)
      },
    } as never)
  }

  // ---- envd: HTTP /files and /health ----------------------------------------------------------

  const envdHttp = async (
    req: IncomingMessage,
    res: ServerResponse,
    url: URL,
    record: RequestRecord,
  ): Promise<void> => {
    const id = String(req.headers['e2b-sandbox-id'] ?? '')
    record.sandboxId = id
    const sandbox = sandboxes.get(id)
    if (sandbox?.record.state !== 'running')
      return json(res, 502, { code: 502, message: `The sandbox ${id} was not found`, sandboxId: id })
    if (req.headers['x-access-token'] !== sandbox.record.envdAccessToken)
      return json(res, 401, { code: 401, message: 'invalid access token' })
    if (url.pathname === '/health') return void res.writeHead(204).end()
    const path = sandbox.sandboxPath(url.searchParams.get('path') ?? '')
    if (req.method === 'GET') {
      const host = sandbox.hostPath(path)
      let stat: Stats
      try {
        stat = await fsp.stat(host)
      } catch {
        return json(res, 404, { code: 404, message: `path '${path}' does not exist` })
      }
      if (stat.isDirectory()) return json(res, 400, { code: 400, message: `path '${path}' is a directory` })
      const bytes = await fsp.readFile(host)
      res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': String(bytes.byteLength) })
      return void res.end(bytes)
    }
    if (req.method === 'POST') {
      const body = Buffer.concat(await collect(req))
      const type = String(req.headers['content-type'] ?? '')
      const files: Array<{ path: string; data: Uint8Array }> = []
      if (type.startsWith('multipart/form-data')) {
        const form = await new Request('http://standin/files', {
          method: 'POST',
          headers: { 'content-type': type },
          body,
        }).formData()
        for (const [, value] of form.entries()) {
          if (typeof value === 'string') continue
          const name = url.searchParams.get('path') ?? value.name
          files.push({ path: sandbox.sandboxPath(name), data: new Uint8Array(await value.arrayBuffer()) })
        }
      } else files.push({ path, data: new Uint8Array(body) })
      const written: unknown[] = []
      for (const file of files) {
        const host = sandbox.hostPath(file.path)
        try {
          await fsp.mkdir(dirname(host), { recursive: true })
          await fsp.writeFile(host, file.data)
        } catch (error) {
          const code = (error as NodeJS.ErrnoException).code
          return json(res, code === 'EISDIR' ? 400 : 500, {
            code: code === 'EISDIR' ? 400 : 500,
            message: `cannot write '${file.path}': ${code ?? (error as Error).message}`,
          })
        }
        written.push({ name: basename(file.path), type: 'file', path: file.path })
      }
      return json(res, 200, written)
    }
    return json(res, 405, { code: 405, message: 'method not allowed' })
  }

  // ---- control plane: REST --------------------------------------------------------------------

  const describe = (sandbox: StandinSandbox) => ({
    templateID: sandbox.record.templateId,
    sandboxID: sandbox.record.id,
    clientID: 'standin',
    startedAt: sandbox.record.startedAt.toISOString(),
    endAt: sandbox.record.endAt.toISOString(),
    cpuCount: 2,
    memoryMB: 512,
    diskSizeMB: 1024,
    metadata: sandbox.record.metadata,
    state: sandbox.record.state,
    envdVersion: ENVD_VERSION,
  })
  const created = (sandbox: StandinSandbox) => ({
    templateID: sandbox.record.templateId,
    sandboxID: sandbox.record.id,
    clientID: 'standin',
    envdVersion: ENVD_VERSION,
    envdAccessToken: sandbox.record.envdAccessToken,
    domain: null,
  })

  const controlPlane = async (
    req: IncomingMessage,
    res: ServerResponse,
    url: URL,
    record: RequestRecord,
  ): Promise<void> => {
    if (req.headers['x-api-key'] !== apiKey)
      return json(res, 401, { code: 401, message: 'Invalid API key, please visit the dashboard to get your API key' })
    const body = req.method === 'POST' ? parseJson(Buffer.concat(await collect(req)).toString('utf8')) : undefined
    const parts = url.pathname.split('/').filter(Boolean)
    if (req.method === 'POST' && url.pathname === '/sandboxes') {
      const templateId = typeof body?.templateID === 'string' ? body.templateID : ''
      if (!TEMPLATE_ALIASES.has(templateId))
        return json(res, 404, { code: 404, message: `template '${templateId}' not found` })
      const timeout = typeof body?.timeout === 'number' ? body.timeout : 15
      const id = `i${randomBytes(9).toString('hex')}`
      const sandbox = new StandinSandbox(
        {
          id,
          templateId,
          metadata: isRecord(body?.metadata) ? (body.metadata as Record<string, string>) : {},
          envVars: isRecord(body?.envVars) ? (body.envVars as Record<string, string>) : {},
          envdAccessToken: randomBytes(16).toString('hex'),
          startedAt: new Date(),
          endAt: new Date(),
          state: 'running',
          autoPause: body?.autoPause === true,
        },
        join(baseDir, id),
        bwrap,
      )
      sandboxes.set(id, sandbox)
      expire(sandbox, timeout)
      record.sandboxId = id
      return json(res, 201, created(sandbox))
    }
    if (req.method === 'GET' && url.pathname === '/v2/sandboxes') {
      const state = url.searchParams.get('state')?.split(',')
      return json(
        res,
        200,
        [...sandboxes.values()].filter((s) => !state || state.includes(s.record.state)).map(describe),
      )
    }
    if (parts[0] !== 'sandboxes' || !parts[1])
      return json(res, 404, { code: 404, message: `no route ${req.method} ${url.pathname}` })
    const sandbox = sandboxes.get(parts[1])
    record.sandboxId = parts[1]
    if (!sandbox) return json(res, 404, { code: 404, message: `sandbox '${parts[1]}' not found` })
    const action = parts[2]
    if (req.method === 'GET' && action === undefined) return json(res, 200, describe(sandbox))
    if (req.method === 'DELETE' && action === undefined) {
      remove(sandbox.record.id)
      return void res.writeHead(204).end()
    }
    if (req.method === 'POST' && action === 'timeout') {
      expire(sandbox, typeof body?.timeout === 'number' ? body.timeout : 15)
      return void res.writeHead(204).end()
    }
    if (req.method === 'POST' && action === 'pause') {
      if (sandbox.record.state === 'paused')
        return json(res, 409, { code: 409, message: `sandbox '${sandbox.record.id}' is already paused` })
      pause(sandbox)
      return void res.writeHead(204).end()
    }
    if (req.method === 'POST' && action === 'connect') {
      const resumed = sandbox.record.state === 'paused'
      sandbox.record.state = 'running'
      expire(sandbox, typeof body?.timeout === 'number' ? body.timeout : 300)
      return json(res, resumed ? 201 : 200, created(sandbox))
    }
    return json(res, 404, { code: 404, message: `no route ${req.method} ${url.pathname}` })
  }

  // ---- one server ------------------------------------------------------------------------------

  const rpc = connectNodeAdapter({
    routes,
    fallback: (request, response) => {
      // The stand-in listens with node:http only, never HTTP/2.
      const req = request as IncomingMessage
      const res = response as ServerResponse
      const url = new URL(req.url ?? '/', 'http://standin')
      const record = requests[requests.length - 1] as RequestRecord
      const handler = url.pathname === '/files' || url.pathname === '/health' ? envdHttp : controlPlane
      handler(req, res, url, record).catch((error: unknown) => {
        if (!res.headersSent) json(res, 500, { code: 500, message: (error as Error).message })
        else res.destroy()
      })
    },
  })

  const server: Server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://standin')
    const record: RequestRecord = { method: req.method ?? 'GET', path: url.pathname }
    const sandboxHeader = req.headers['e2b-sandbox-id']
    if (typeof sandboxHeader === 'string') record.sandboxId = sandboxHeader
    requests.push(record)
    res.on('finish', () => (record.status = res.statusCode))
    const id = String(++stamp)
    req.headers['x-standin-request'] = id
    open.set(id, { res, record })
    res.on('close', () => open.delete(id))
    const fault = faults.find((f) => f.times > 0 && f.method === record.method && record.path.startsWith(f.path))
    if (fault) {
      fault.times--
      return json(res, fault.status, { code: fault.status, message: fault.message ?? `injected fault ${fault.status}` })
    }
    const held = holds.findIndex((h) => h.method === record.method && record.path.startsWith(h.path))
    if (held >= 0) {
      const [hold] = holds.splice(held, 1)
      hold.arrive(record)
      void hold.gate.then(() => rpc(req, res))
      return
    }
    rpc(req, res)
  })
  await new Promise<void>((resolve) => server.listen(options.port ?? 0, '127.0.0.1', resolve))
  const address = server.address() as import('node:net').AddressInfo
  const url = `http://127.0.0.1:${address.port}`

  return {
    url,
    apiKey,
    env: { E2B_API_KEY: apiKey, E2B_API_URL: url, E2B_SANDBOX_URL: url },
    requests,
    faults,
    sandboxes: () => [...sandboxes.values()],
    get: (id) => sandboxes.get(id),
    rootOf: (id) => {
      const sandbox = sandboxes.get(id)
      if (!sandbox) throw new Error(`e2b-standin: no sandbox ${id}`)
      return sandbox.root
    },
    kill: (id) => remove(id),
    hold: (method, path) => {
      let arrive!: (record: RequestRecord) => void
      let release!: () => void
      const arrived = new Promise<RequestRecord>((resolve) => (arrive = resolve))
      const gate = new Promise<void>((resolve) => (release = resolve))
      holds.push({ method, path, arrive, gate })
      return { arrived, release }
    },
    dropStream: (command) => {
      let drop!: (record: RequestRecord) => void
      const dropped = new Promise<RequestRecord>((resolve) => (drop = resolve))
      drops.push({ command, drop })
      return { dropped }
    },
    close: async () => {
      for (const id of [...sandboxes.keys()]) remove(id)
      server.closeAllConnections()
      await new Promise<void>((resolve) => server.close(() => resolve()))
      if (ownBase) rmSync(baseDir, { recursive: true, force: true })
    },
  }
}

export const name = 'e2b-standin'
