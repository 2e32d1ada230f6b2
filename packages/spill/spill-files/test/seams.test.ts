// Repository test (issue #35): only the seam packages start programs or touch the temp directory.
// Everything else starts processes through ctx.subprocess / ctx.sandbox and writes temporary or
// spilled bytes through @dsh/spill-files, so the next capability cannot bring back an unconfined
// spawn or a guessable /tmp path. Each source file is parsed (TypeScript's parser, so comments,
// method declarations like `fork(...)` and calls such as `ctx.subprocess.spawn(...)` do not count)
// and checked for:
//   - importing or requiring `child_process` or `node-pty` (any spelling, static or dynamic);
//   - calling a bare `spawn`, `spawnSync`, `exec`, `execSync`, `execFile`, `execFileSync` or `fork`,
//     or reaching native process code (`process.binding`, `process._linkedBinding`, `process.dlopen`);
//   - calling `tmpdir()`/`os.tmpdir()`, `mkdtemp`/`mkdtempSync`, or reading `TMPDIR`;
//   - naming a path under /tmp, /var/tmp or /dev/shm.
// A file that cannot use a seam is on ALLOWED with a one-line reason; an entry that no longer
// matches anything fails the test too, so the list only shrinks.
import { readdirSync, readFileSync, statSync } from 'node:fs'
import { join, relative } from 'node:path'
import { fileURLToPath } from 'node:url'
import ts from 'typescript'
import { describe, expect, it } from 'vitest'

const root = fileURLToPath(new URL('../../../../', import.meta.url))

/** Package families that are the seams themselves. */
const SEAM_FAMILIES = ['subprocess', 'sandbox', 'spill', 'test-support']

/** Files (or directories, ending in /) that may do it anyway, each with why. */
const ALLOWED: Record<string, string> = {
  'packages/sdk/client/src/harness.ts':
    'the SDK client starts the dsh server for a user program: a library used outside any plugin tree, with no ctx.subprocess',
  'packages/boot/plugin-manager/src/manager.ts':
    'the dsh-plugin bin runs npm (scripts off) for the user before any app exists: no plugin tree, no ctx.subprocess',
  'packages/session/session-persistence/src/contract.ts':
    'the persistence conformance suite, imported only by provider tests: starts the providers under test in other processes and scratch dirs',
  'packages/boot/cli/src/commands/doctor.mjs':
    '`dsh doctor` runs before any app exists (no plugin tree, no ctx.subprocess): it runs `rg --version` and `git --version` without a shell, with a timeout, and loads the native add-ons to report whether they work',
  'packages/runtime-diagnostics/native-addons/src/index.ts':
    'names node-pty only to look for its compiled binary on disk; it never loads the add-on or starts a process',
  'bundles/web/src/startup.ts':
    "opens the user's browser for `dsh web`: a fixed opener that must outlive dsh, which the session-scoped seam would kill",
}

const SOURCE = /\.(ts|tsx|mts|cts|js|mjs|cjs)$/
const SPAWNERS = new Set(['spawn', 'spawnSync', 'exec', 'execSync', 'execFile', 'execFileSync', 'fork'])
const NATIVE = new Set(['binding', '_linkedBinding', 'dlopen'])
const PROCESS_MODULES = /(^|[/:])(child_process|node-pty)$/
const TEMP_PATH = /^(\/tmp|\/var\/tmp|\/dev\/shm)(\/|$)/

function walk(dir: string, out: string[]): void {
  let names: string[]
  try {
    names = readdirSync(dir)
  } catch {
    return
  }
  for (const name of names) {
    if (name === 'node_modules' || name === 'dist' || name.startsWith('.')) continue
    const path = join(dir, name)
    if (statSync(path).isDirectory()) walk(path, out)
    else if (SOURCE.test(name) && !name.endsWith('.d.ts')) out.push(path)
  }
}

/** Shipped sources outside the seam families: packages' src/ and bin/, bundles' src/. */
function sources(): string[] {
  const files: string[] = []
  for (const family of readdirSync(join(root, 'packages'))) {
    if (SEAM_FAMILIES.includes(family)) continue
    const familyDir = join(root, 'packages', family)
    if (!statSync(familyDir).isDirectory()) continue
    for (const pkg of readdirSync(familyDir)) {
      walk(join(familyDir, pkg, 'src'), files)
      walk(join(familyDir, pkg, 'bin'), files)
    }
  }
  for (const bundle of readdirSync(join(root, 'bundles'))) walk(join(root, 'bundles', bundle, 'src'), files)
  return files.map((file) => relative(root, file).split('\\').join('/')).sort()
}

/** One line per violation: `path:line: what`. */
export function violations(path: string, text: string): string[] {
  const file = ts.createSourceFile(
    path,
    text,
    ts.ScriptTarget.Latest,
    false,
    path.endsWith('x') ? ts.ScriptKind.TSX : ts.ScriptKind.TS,
  )
  const found: string[] = []
  const report = (node: ts.Node, what: string) =>
    found.push(`${path}:${file.getLineAndCharacterOfPosition(node.getStart(file)).line + 1}: ${what}`)
  const visit = (node: ts.Node): void => {
    if (ts.isStringLiteralLike(node)) {
      if (PROCESS_MODULES.test(node.text)) report(node, `names the module ${node.text}`)
      else if (TEMP_PATH.test(node.text)) report(node, `names the temp path ${JSON.stringify(node.text)}`)
    } else if (ts.isTemplateExpression(node) && TEMP_PATH.test(node.head.text)) {
      report(node, `names the temp path ${JSON.stringify(node.head.text)}`)
    } else if (ts.isCallExpression(node)) {
      const callee = node.expression
      const name = ts.isIdentifier(callee)
        ? callee.text
        : ts.isPropertyAccessExpression(callee)
          ? callee.name.text
          : undefined
      if (ts.isIdentifier(callee) && name && SPAWNERS.has(name)) report(node, `calls ${name}()`)
      if (
        ts.isPropertyAccessExpression(callee) &&
        ts.isIdentifier(callee.expression) &&
        callee.expression.text === 'process' &&
        name &&
        NATIVE.has(name)
      )
        report(node, `calls process.${name}()`)
      if (name === 'tmpdir') report(node, 'calls tmpdir()')
      if (name === 'mkdtemp' || name === 'mkdtempSync') report(node, `calls ${name}()`)
    } else if (ts.isIdentifier(node) && node.text === 'TMPDIR') {
      report(node, 'reads TMPDIR')
    } else if (ts.isPropertyAccessExpression(node) && node.name.text === 'TMPDIR') {
      report(node, 'reads TMPDIR')
    } else if (
      ts.isElementAccessExpression(node) &&
      ts.isStringLiteralLike(node.argumentExpression) &&
      node.argumentExpression.text === 'TMPDIR'
    ) {
      report(node, 'reads TMPDIR')
    }
    ts.forEachChild(node, visit)
  }
  visit(file)
  // `x.TMPDIR` is reported once, not also for its name identifier.
  return [...new Set(found)]
}

function allowedBy(path: string): string | undefined {
  return Object.keys(ALLOWED).find((entry) => (entry.endsWith('/') ? path.startsWith(entry) : path === entry))
}

describe('seams', () => {
  const files = sources()

  it('finds the shipped sources (a positive control for the walk)', () => {
    expect(files).toContain('packages/jobs/jobs/src/index.ts')
    expect(files).toContain('bundles/web/src/startup.ts')
    expect(files.some((file) => file.startsWith('packages/subprocess/'))).toBe(false)
    expect(files.length).toBeGreaterThan(300)
  })

  it('detects each forbidden use, and not methods or seam calls of the same name', () => {
    const bad = [
      "import { spawn } from 'node:child_process'",
      "const cp = await import('child_process')",
      "import * as pty from 'node-pty'",
      'spawn("rg", [])',
      'execFileSync("tar", [])',
      'fork("x.js")',
      "process.binding('spawn_sync')",
      "process.getBuiltinModule('node:child_process')",
      'const d = os.tmpdir()',
      'tmpdir()',
      'await mkdtemp(prefix)',
      'mkdtempSync(prefix)',
      'const t = process.env.TMPDIR',
      "const t = process.env['TMPDIR']",
      "const p = '/tmp/dsh-jobs'",
      'const p = `/tmp/dsh-${process.pid}`',
      "const p = '/dev/shm/x'",
    ]
    for (const line of bad) expect(violations('x.ts', line), line).toHaveLength(1)
    const fine = [
      'class A { fork(source: string) { return source } }',
      'ctx.subprocess.spawn({ file: "rg" })',
      'ctx.sessions.fork(session)',
      'agents.spawn({ prompt })',
      '// spawn("rg") in a comment, and os.tmpdir() too',
      "const p = 'tmpfile.txt'",
      "const p = '/tmpx'",
      'regex.exec(text)',
    ]
    for (const line of fine) expect(violations('x.ts', line), line).toEqual([])
  })

  it('no code outside the seam packages starts a process or touches the temp directory', () => {
    const offending: string[] = []
    for (const path of files) {
      if (allowedBy(path)) continue
      offending.push(...violations(path, readFileSync(join(root, path), 'utf8')))
    }
    expect(
      offending,
      'start processes through ctx.subprocess / ctx.sandbox and write temp files through @dsh/spill-files',
    ).toEqual([])
  })

  it('every allow-list entry still covers a file that needs it (the list only shrinks)', () => {
    const stale = Object.keys(ALLOWED).filter(
      (entry) =>
        !files.some(
          (path) => allowedBy(path) === entry && violations(path, readFileSync(join(root, path), 'utf8')).length > 0,
        ),
    )
    expect(stale).toEqual([])
  })
})
