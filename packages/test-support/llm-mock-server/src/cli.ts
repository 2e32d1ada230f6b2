// `dsh-llm-mock-server --script FILE [--port N] [--base-path P]`: prints the base URL on stdout and
// serves until SIGTERM or SIGINT. Usage errors exit 2, a bad script exits 1; one line on stderr each.
import { MockScriptError } from './script.ts'
import { type MockServer, startMockServer } from './server.ts'

const USAGE = 'usage: dsh-llm-mock-server --script FILE [--port N] [--base-path /v1]'

export interface CliArgs {
  script: string
  port: number
  basePath?: string
}

export function parseArgs(argv: string[]): CliArgs | { help: true } {
  let script: string | undefined
  let port = 0
  let basePath: string | undefined
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]
    const eq = arg.indexOf('=')
    const [flag, inline] = arg.startsWith('--') && eq > 0 ? [arg.slice(0, eq), arg.slice(eq + 1)] : [arg, undefined]
    const value = () => {
      const v = inline ?? argv[++i]
      if (v === undefined || v === '') throw new UsageError(`${flag} needs a value`)
      return v
    }
    switch (flag) {
      case '--help':
      case '-h':
        return { help: true }
      case '--script':
        script = value()
        break
      case '--port': {
        const v = value()
        port = Number(v)
        if (!/^\d+$/.test(v) || port > 65535) throw new UsageError(`--port expects a port number 0-65535, got '${v}'`)
        break
      }
      case '--base-path':
        basePath = value()
        break
      default:
        throw new UsageError(`unknown argument '${arg}'`)
    }
  }
  if (!script) throw new UsageError('--script FILE is required')
  return { script, port, basePath }
}

export class UsageError extends Error {}

export async function main(argv: string[]): Promise<void> {
  let args: CliArgs
  try {
    const parsed = parseArgs(argv)
    if ('help' in parsed) {
      process.stdout.write(
        `${USAGE}\nServes a scripted OpenAI/DeepSeek-compatible chat completions API on 127.0.0.1.\n`,
      )
      return
    }
    args = parsed
  } catch (error) {
    process.stderr.write(`dsh-llm-mock-server: ${(error as Error).message}\n${USAGE}\n`)
    process.exitCode = 2
    return
  }
  let server: MockServer
  try {
    server = await startMockServer({ script: args.script, port: args.port, basePath: args.basePath })
  } catch (error) {
    const message = error instanceof MockScriptError ? error.message : `cannot start: ${(error as Error).message}`
    process.stderr.write(`dsh-llm-mock-server: ${message}\n`)
    process.exitCode = 1
    return
  }
  process.stdout.write(`${server.baseURL}\n`)
  const stop = () => {
    void server.close().then(() => process.exit(0))
  }
  process.once('SIGTERM', stop)
  process.once('SIGINT', stop)
}
