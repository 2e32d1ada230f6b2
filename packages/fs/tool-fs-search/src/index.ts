// @dsh/tool-fs-search: model-facing `glob` and `grep` over the packaged ripgrep binary.
//
// Every call spawns rg with a fixed argv that starts with `--no-config`; model-provided values are
// single argv elements in `--flag=value` form, so no shell and no quoting exist anywhere. In a
// confining mode rg runs inside the session's sandbox (`ctx.sandbox.wrap`) when a provider is
// loaded, and the search root must pass sandbox-policy's `harnessReadRefusal` in any case. Output
// paths are relative to the call's working directory (absolute when outside it), and results are
// capped with the cap stated in the text the model reads.
import { realpath, stat } from 'node:fs/promises'
import { basename, isAbsolute, relative, resolve, sep } from 'node:path'
import type { Context } from 'cordis'
import Schema from 'schemastery'
import type { ToolCallContext, ToolOutput } from '@dsh/tools'
import { toolError as fail } from '@dsh/tools'
import type {} from '@dsh/subprocess'
import { harnessReadRefusal } from '@dsh/sandbox-policy'
import { RG_PATH, runRg, type RgOptions, type RgOutcome } from './rg.ts'
import { registerPromptSection } from './prompt.ts'

export { RG_PATH, runRg, type RgOptions, type RgOutcome } from './rg.ts'

export interface ToolFsSearchConfig {
  maxFiles: number
  maxMatches: number
  maxOutputBytes: number
  maxLineLength: number
  sort: 'path' | 'none'
  hidden: boolean
  respectIgnore: boolean
  timeoutMs: number
}

export const Config: Schema<Partial<ToolFsSearchConfig>, ToolFsSearchConfig> = Schema.object({
  maxFiles: Schema.natural().min(1).default(200).description('Paths one `glob` result lists.'),
  maxMatches: Schema.natural().min(1).default(500).description('Matching lines one `grep` result lists.'),
  maxOutputBytes: Schema.natural()
    .min(1024)
    .default(64 * 1024)
    .description('Bytes of one result text; listing stops at a line boundary.'),
  maxLineLength: Schema.natural()
    .min(40)
    .default(500)
    .description('Characters of a matching line shown (rg --max-columns with a preview).'),
  sort: Schema.union(['path', 'none'] as const)
    .default('path')
    .description('`path`: deterministic order (rg --sort path, single-threaded); `none`: rg parallel order.'),
  hidden: Schema.boolean().default(false).description('Search hidden files and directories (.git is always skipped).'),
  respectIgnore: Schema.boolean().default(true).description('Honour .gitignore, .ignore and .rgignore files.'),
  timeoutMs: Schema.natural()
    .min(100)
    .default(60_000)
    .description('rg is killed after this long; the partial result says so.'),
})

export const name = 'tool-fs-search'
export const inject = ['tools', 'subprocess']

function plural(n: number, word: string, many = `${word}s`): string {
  return `${n} ${n === 1 ? word : many}`
}

/** Where the search runs and how it is named on rg's command line (so rg prints cwd-relative paths). */
interface Target {
  abs: string
  /** argv path: `.`, a cwd-relative path, or absolute when outside the cwd. */
  arg: string
  isFile: boolean
  /** rg's spelling of a result path -> the path the model sees. */
  display(path: string): string
  /** `--glob=!...` exclusions for unreadable paths under the searched directory. */
  exclude: string[]
  /** More exclusions when rg runs outside the sandbox: the per-process entries of /proc. */
  unconfinedExclude: string[]
}

const within = (path: string, dir: string) => path === dir || path.startsWith(dir.endsWith(sep) ? dir : dir + sep)

/** The session's sandbox policy for this call; undefined without a policy owner. */
function policyFor(ctx: Context, call: ToolCallContext): SandboxPolicy | undefined {
  return ctx.get('sandboxPolicy')?.resolve({ sessionId: call.sessionId, cwd: call.cwd })
}

type SandboxPolicy = ReturnType<Context['sandboxPolicy']['resolve']>

/**
 * In a confining mode rg runs inside the session's sandbox (`ctx.sandbox.wrap`), like a bash
 * command: a private /proc and the hidden paths then apply to what it walks. Undefined when the
 * mode does not confine or no sandbox provider is loaded; a runner that cannot confine (no bwrap,
 * no Landlock) also leaves rg unconfined, where the tool's own guards (`locate`) still hold.
 */
async function confine(
  ctx: Context,
  policy: SandboxPolicy | undefined,
  argv: string[],
  cwd: string,
): Promise<RgOptions['confined']> {
  const sandbox = ctx.get('sandbox')
  if (!sandbox || !policy || policy.mode === 'danger-full-access') return undefined
  try {
    const invocation = await sandbox.wrap({ argv: [RG_PATH, ...argv], cwd, policy })
    return { argv: invocation.argv, ...(invocation.launcher ? { launcher: invocation.launcher } : {}) }
  } catch (error) {
    if (error instanceof Error && error.name === 'SandboxError') return undefined
    throw error
  }
}

/** Exclusions go last among the globs (rg lets a later glob override an earlier one), before `--`. */
function excluding(args: string[], exclude: readonly string[]): string[] {
  const end = args.lastIndexOf('--')
  return [...args.slice(0, end), ...exclude, ...args.slice(end)]
}

async function locate(
  path: string | undefined,
  call: ToolCallContext,
  policy: SandboxPolicy | undefined,
): Promise<Target | ToolOutput> {
  const abs = resolve(call.cwd, path ?? '.')
  // Before anything touches it: the search root must be readable for the model (not a hidden
  // credential file, not dsh's or another process's /proc entry, directly or through links).
  const refusal = harnessReadRefusal(abs, policy)
  if (refusal !== undefined)
    return fail('SANDBOX_DENIED', `the sandbox refused to search ${abs}: ${refusal}. Search elsewhere.`)
  let info: Awaited<ReturnType<typeof stat>>
  try {
    info = await stat(abs)
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code
    if (code === 'ENOENT' || code === 'ENOTDIR')
      return fail(
        'NOT_FOUND',
        `the path ${abs} does not exist. Give an existing directory (or omit path to search the working directory).`,
      )
    return fail('PATH_ERROR', `the path ${abs} cannot be searched (${code ?? String(error)}).`)
  }
  const real = await realpath(abs).catch(() => abs)
  const hidden = policy && policy.mode !== 'danger-full-access' ? (policy.hiddenPaths ?? []) : []
  // rg anchors no glob to an absolute search root, so a hidden file under the searched directory
  // is excluded by its name wherever it occurs below (a wider net than needed, never a narrower
  // one). An rg that runs unconfined (no sandbox provider, or no runner) skips the per-process
  // entries of /proc the same way when it walks /proc or `/` (it does not follow the links of
  // /dev/fd); a confined rg has a private /proc and needs no such net.
  const exclude = [
    ...new Set(
      hidden.filter((entry) => within(entry, real) && entry !== real).map((entry) => `--glob=!${basename(entry)}`),
    ),
  ]
  const unconfinedExclude: string[] = []
  if (policy && policy.mode !== 'danger-full-access') {
    if (real === '/proc') unconfinedExclude.push('--glob=!{self,thread-self,[0-9]*}')
    else if (within('/proc', real)) unconfinedExclude.push('--glob=!proc')
  }
  const rel = relative(call.cwd, abs)
  const inside = !(rel.startsWith('..') || isAbsolute(rel))
  const arg = rel === '' ? '.' : inside ? rel : abs
  // Inside the cwd rg already prints cwd-relative paths (`./a/b` under the `.` root). Outside it
  // prints absolute ones; a result that is nevertheless under the cwd is shown relative.
  const display = inside
    ? (path: string) => (path.startsWith('./') ? path.slice(2) : path)
    : (path: string) => {
        const shown = relative(call.cwd, path)
        return shown.startsWith('..') || isAbsolute(shown) ? path : shown
      }
  return { abs, arg, isFile: info.isFile(), display, exclude, unconfinedExclude }
}

export function baseArgs(config: ToolFsSearchConfig): string[] {
  const args = ['--no-config', '--color=never']
  if (config.sort === 'path') args.push('--sort=path')
  if (config.hidden) args.push('--hidden', '--glob=!.git')
  if (!config.respectIgnore) args.push('--no-ignore')
  return args
}

/** The exact argv `grep` runs (exported for the benchmark, which runs it without the tool). */
export function grepArgs(config: ToolFsSearchConfig, pattern: string, target: string, include?: string): string[] {
  const args = [...baseArgs(config), '--line-number', '--with-filename', '--no-heading', '--null']
  args.push(`--max-columns=${config.maxLineLength}`, '--max-columns-preview')
  if (include !== undefined) args.push(`--glob=${include}`)
  args.push(`--regexp=${pattern}`, '--', target)
  return args
}

export function globArgs(config: ToolFsSearchConfig, pattern: string, target: string): string[] {
  return [...baseArgs(config), '--files', `--glob=${pattern}`, '--', target]
}

function rgFailure(outcome: RgOutcome, what: 'pattern' | 'include' | 'glob'): ToolOutput | undefined {
  if (outcome.spawnError) return fail('RG_UNAVAILABLE', `ripgrep could not be started (${outcome.spawnError}).`)
  const stderr = outcome.stderr.trim()
  if (/regex parse error|error parsing regex|regex.*(too big|size limit)/i.test(stderr)) {
    return fail(
      'INVALID_REGEX',
      `the pattern is not a valid regular expression (Rust regex syntax). ripgrep said:\n${stderr}\nFix the pattern; escape literal characters such as ( [ { . * + ? with a backslash.`,
    )
  }
  if (/error parsing glob|invalid glob/i.test(stderr)) {
    return fail('INVALID_GLOB', `the ${what} is not a valid glob. ripgrep said:\n${stderr}`)
  }
  return undefined
}

function notes(outcome: RgOutcome, config: ToolFsSearchConfig): string[] {
  const out: string[] = []
  if (outcome.timedOut)
    out.push(`The search was stopped after ${config.timeoutMs / 1000} s, so the counts are incomplete.`)
  const stderr = outcome.stderr.trim()
  if (outcome.code === 2 && stderr) out.push(`Some paths could not be searched: ${stderr.split('\n')[0]}`)
  return out
}

export { PROMPT_SECTION } from './prompt.ts'

export function apply(ctx: Context, config: ToolFsSearchConfig): void {
  registerPromptSection(ctx)
  ctx.tools.register<{ pattern: string; path?: string }>({
    name: 'glob',
    description:
      'Find files by glob pattern (e.g. "**/*.ts", "*.{json,yaml}"; without a slash it matches names at any depth) ' +
      `under the working directory or path, skipping .gitignore'd${config.hidden ? '' : ' and hidden'} files. ` +
      `Returns relative paths, ${config.sort === 'path' ? 'sorted, ' : ''}at most ${config.maxFiles}.`,
    parameters: {
      type: 'object',
      properties: {
        pattern: {
          type: 'string',
          minLength: 1,
          description: 'Glob pattern matched against paths relative to the searched directory.',
        },
        path: { type: 'string', minLength: 1, description: 'Directory to search (default: the working directory).' },
      },
      required: ['pattern'],
      additionalProperties: false,
    },
    concurrencySafe: true,
    async execute(args, call) {
      const policy = policyFor(ctx, call)
      const target = await locate(args.path, call, policy)
      if ('content' in target) return target
      if (target.isFile)
        return fail(
          'NOT_A_DIRECTORY',
          `the path ${target.abs} is a file; glob searches directories. Pass its parent directory, or use read.`,
        )
      const files: string[] = []
      let bytes = 0
      let byteCapped = false
      const argv = excluding(globArgs(config, args.pattern, target.arg), target.exclude)
      const confined = await confine(ctx, policy, argv, call.cwd)
      const outcome = await runRg(ctx.subprocess, confined ? argv : excluding(argv, target.unconfinedExclude), {
        cwd: call.cwd,
        ...(confined ? { confined } : {}),
        signal: call.signal,
        timeoutMs: config.timeoutMs,
        onLine(line) {
          const path = target.display(line)
          if (bytes + path.length + 1 > config.maxOutputBytes) {
            byteCapped = true
            return false
          }
          files.push(path)
          bytes += Buffer.byteLength(path) + 1
          return files.length < config.maxFiles
        },
      })
      const failure = rgFailure(outcome, 'glob')
      if (failure) return failure
      if (outcome.code === 2 && outcome.lines === 0)
        return fail('RG_ERROR', `ripgrep failed: ${outcome.stderr.trim() || `exit code ${outcome.code}`}`)
      const total = outcome.lines
      const meta = { total, shown: files.length, root: target.abs, capped: total > files.length }
      const extra = notes(outcome, config)
      if (total === 0)
        return {
          content: [`No files match ${JSON.stringify(args.pattern)} in ${target.abs}.`, ...extra].join(' '),
          meta,
        }
      let header = `Found ${plural(total, 'file')} matching ${JSON.stringify(args.pattern)}.`
      if (total > files.length) {
        const cap = byteCapped ? `${config.maxOutputBytes} bytes of output` : `${config.maxFiles} files`
        header = `Found ${plural(total, 'file')} matching ${JSON.stringify(args.pattern)}; showing the first ${files.length} (cap: ${cap}). Use a narrower pattern or path to see the rest.`
      }
      return { content: [header, ...extra].join(' ') + '\n' + files.join('\n'), meta }
    },
  })

  ctx.tools.register<{ pattern: string; path?: string; include?: string }>({
    name: 'grep',
    description:
      'Search file contents with a ripgrep (Rust) regex; escape literal ( [ { . * + ? with a backslash. ' +
      'Searches the working directory or path (a directory or one file); include filters files by glob (e.g. "*.ts"). ' +
      `Skips .gitignore'd${config.hidden ? '' : ' and hidden'} files. Returns "line: text" grouped by relative path, ` +
      `at most ${config.maxMatches} lines; lines over ${config.maxLineLength} characters are shortened.`,
    parameters: {
      type: 'object',
      properties: {
        pattern: { type: 'string', minLength: 1, description: 'Regular expression to search for.' },
        path: {
          type: 'string',
          minLength: 1,
          description: 'Directory or file to search (default: the working directory).',
        },
        include: { type: 'string', minLength: 1, description: 'Glob of the files to search, e.g. "*.py".' },
      },
      required: ['pattern'],
      additionalProperties: false,
    },
    concurrencySafe: true,
    async execute(args, call) {
      const policy = policyFor(ctx, call)
      const target = await locate(args.path, call, policy)
      if ('content' in target) return target
      const out: string[] = []
      let shown = 0
      let files = 0
      let bytes = 0
      let byteCapped = false
      let lastFile: string | undefined
      const argv = excluding(grepArgs(config, args.pattern, target.arg, args.include), target.exclude)
      const confined = await confine(ctx, policy, argv, call.cwd)
      const outcome = await runRg(ctx.subprocess, confined ? argv : excluding(argv, target.unconfinedExclude), {
        cwd: call.cwd,
        ...(confined ? { confined } : {}),
        signal: call.signal,
        timeoutMs: config.timeoutMs,
        onLine(line) {
          const nul = line.indexOf('\0')
          if (nul === -1) return true
          const file = target.display(line.slice(0, nul))
          const rest = line.slice(nul + 1)
          const colon = rest.indexOf(':')
          const entry = colon === -1 ? rest : `${rest.slice(0, colon)}: ${rest.slice(colon + 1)}`
          const heading = file !== lastFile ? (lastFile === undefined ? '' : '\n') + file + '\n' : ''
          const size = Buffer.byteLength(heading) + Buffer.byteLength(entry) + 3
          if (bytes + size > config.maxOutputBytes) {
            byteCapped = true
            return false
          }
          if (heading) {
            out.push(heading + '  ' + entry)
            files++
            lastFile = file
          } else out.push('  ' + entry)
          bytes += size
          shown++
          return shown < config.maxMatches
        },
      })
      const failure = rgFailure(outcome, args.include !== undefined ? 'include' : 'pattern')
      if (failure) return failure
      if (outcome.code === 2 && outcome.lines === 0)
        return fail('RG_ERROR', `ripgrep failed: ${outcome.stderr.trim() || `exit code ${outcome.code}`}`)
      const total = outcome.lines
      const meta = { total, shown, files, root: target.abs, capped: total > shown }
      const extra = notes(outcome, config)
      const scope = `${target.abs}${args.include ? ` (files matching ${JSON.stringify(args.include)})` : ''}`
      if (total === 0)
        return { content: [`No matches for ${JSON.stringify(args.pattern)} in ${scope}.`, ...extra].join(' '), meta }
      let header = `Found ${plural(total, 'matching line')} for ${JSON.stringify(args.pattern)}.`
      if (total > shown) {
        const cap = byteCapped ? `${config.maxOutputBytes} bytes of output` : `${config.maxMatches} matching lines`
        header =
          `Found ${plural(total, 'matching line')} for ${JSON.stringify(args.pattern)}; showing the first ${shown} in ${plural(files, 'file')} ` +
          `(cap: ${cap}). Use a more specific pattern, path or include to see the rest.`
      }
      return { content: [header, ...extra].join(' ') + '\n' + out.join('\n'), meta }
    },
  })
}

/** For diagnostics: the binary this package spawns. */
export const ripgrepPath = RG_PATH
