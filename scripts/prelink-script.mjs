// @ts-check
// The stack script transform of scripts/prelink.mjs (its own module so tests can run it).
import { readFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { Script } from 'node:vm'
import { init as lexerReady, parse as parseModule } from 'es-module-lexer'

/** Directory -> whether a `.js` file in it is CommonJS (the nearest package.json's `type`). */
const jsIsCommonJs = new Map()

/**
 * Whether Node loads the module at `url` as CommonJS: a `file:` URL ending in `.cjs`, or in `.js`
 * with no `"type": "module"` in the nearest package.json (Node's own rule). Anything else, and
 * anything this cannot read, counts as not CommonJS (its import is then kept as it was).
 * @param {string} url
 */
export function isCommonJsFile(url) {
  if (!url.startsWith('file:')) return false
  if (url.endsWith('.cjs')) return true
  if (!url.endsWith('.js')) return false
  const start = dirname(fileURLToPath(url))
  const seen = []
  let answer = false
  for (let dir = start; ; dir = dirname(dir)) {
    const known = jsIsCommonJs.get(dir)
    if (known !== undefined) {
      answer = known
      break
    }
    seen.push(dir)
    let text
    try {
      text = readFileSync(join(dir, 'package.json'), 'utf8')
    } catch {
      if (dirname(dir) === dir) break
      continue
    }
    try {
      answer = JSON.parse(text)?.type !== 'module'
    } catch {
      answer = false
    }
    break
  }
  for (const dir of seen) jsIsCommonJs.set(dir, answer)
  return answer
}

/**
 * The specifier that gives a CommonJS module's `default` through `require()` instead of Node's
 * ES module loader: a one-line `data:` module that requires the file and exports it as default.
 * The binding is the same object (the loader and require() share one module cache), and the
 * module still evaluates at its place in the import order. Importing CommonJS from an ES module
 * makes Node lex the file for named exports first: ~150 M instructions for schemastery alone,
 * about 8 % of a one-shot, for a name list the script never reads (see
 * .agents/notes/boot-cuts-2026-12-07.md).
 * @param {string} url a `file:` URL of a CommonJS module
 */
export function requireSpecifier(url) {
  // The file URL must stay verbatim in the specifier: the npm package's first start moves every
  // build path in prelinked/ to the install's by plain text replacement (scripts/pack-relocate.mjs)
  // and checks each `file:///...` it finds (up to a quote or parenthesis) exists. encodeURI keeps a
  // URL's own characters and `'()`; `#` would end the data: URL. A URL this cannot keep verbatim
  // (a quote, a backslash, an escape) is not turned into one (see canRequire).
  const source = `import{createRequire as r}from'node:module';import{fileURLToPath as p}from'node:url';export default r('${url}')(p('${url}'));`
  return `data:text/javascript,${encodeURI(source).replaceAll('#', '%23')}`
}

/**
 * Whether requireSpecifier can name `url` verbatim (a `file:` URL of plain characters).
 * @param {string} url
 */
export function canRequire(url) {
  // What encodeURI keeps as it is, less what ends a JS string, a data: URL or relocation's match
  // (`'`, `#`, `?`, parentheses) and `%` (an escape would be escaped again). pnpm's store names
  // hold `=` and `+` (`schemastery@3.18.0_patch_hash=...`).
  return /^file:\/\/\/[\w./@+=,;:&$!~*-]+$/.test(url)
}

/**
 * Turns one bundled ES module into a function script and a module of its static imports, with
 * es-module-lexer locating every import (strings, comments and regexps are not mistaken for one).
 * The script is `(async function (__imports, __import) { ... })`:
 *  - each static import statement becomes a destructuring of the matching namespace, hoisted to
 *    the top as imports are (the bindings are taken once the imports have evaluated; none of them
 *    imports back into the bundle, so none is still pending then);
 *  - each `import(...)` becomes `__import(...)`, the imports module's own `import()` (a script
 *    compiled with a code cache loses Node's dynamic import callback on Node 20);
 *  - the one `export { ... }` at the end becomes a return.
 * The imports module imports the same specifiers in the same order, so they evaluate in the order
 * the bundled module's imports did; a default-only import of a CommonJS file goes through
 * `require()` (see requireSpecifier). Line numbers stay those of the bundled module. Anything else
 * (import.meta, a second export, an import form not handled) fails the build rather than ship a
 * script that means something else; so does a count that differs from what esbuild reports.
 * @param {string} text the bundled module
 * @param {string} id its stack id (for messages and the syntax check's file name)
 * @param {number} [expected] how many import statements esbuild reports for it
 * @returns {Promise<{ script: string, imports: string, warnings: string[] }>}
 */
export async function toScript(text, id, expected) {
  await lexerReady
  const fail = (what) => {
    throw new Error(`prelink: ${id}: ${what}; this build cannot turn the bundle into a script`)
  }
  const [found] = parseModule(text)
  const specifiers = []
  const decls = []
  const edits = [] // [start, end, replacement], in source order
  for (const imp of found) {
    if (imp.t === 2) {
      // import(...): `ss` is where the keyword starts.
      if (text.slice(imp.ss, imp.ss + 6) !== 'import')
        fail(`a dynamic import at ${imp.ss} is not where the lexer put it`)
      edits.push([imp.ss, imp.ss + 6, '__import'])
      continue
    }
    if (imp.t !== 1 || imp.n === undefined || imp.a > -1)
      fail(`an import of a kind not handled (${text.slice(imp.ss, imp.se).slice(0, 80)})`)
    const statement = text.slice(imp.ss, imp.se)
    const i = specifiers.push(imp.n) - 1
    // The clause: between `import` and the specifier's opening quote, less a trailing `from`.
    const clause = text
      .slice(imp.ss + 6, imp.s - 1)
      .trim()
      .replace(/\s*\bfrom$/, '')
      .trim()
    if (clause) {
      const m = /^(?:([\w$]+)\s*(?:,\s*|$))?(?:\*\s*as\s+([\w$]+)|\{([^}]*)\})?$/.exec(clause)
      if (!m || (!m[1] && !m[2] && m[3] === undefined)) fail(`an import form not handled: ${statement}`)
      const [, def, star, named] = m
      // A default-only import of a CommonJS file reads nothing but `module.exports`.
      if (def && !star && !named?.trim() && canRequire(imp.n) && isCommonJsFile(imp.n))
        specifiers[i] = requireSpecifier(imp.n)
      if (star) decls.push(`const ${star} = __imports[${i}];`)
      const parts = def ? [`default: ${def}`] : []
      for (const item of (named ?? '')
        .split(',')
        .map((x) => x.trim())
        .filter(Boolean)) {
        const pair = /^([\w$]+)(?:\s+as\s+([\w$]+))?$/.exec(item)
        if (!pair) fail(`an import form not handled: ${statement}`)
        parts.push(pair[2] ? `${pair[1]}: ${pair[2]}` : pair[1])
      }
      if (parts.length) decls.push(`const { ${parts.join(', ')} } = __imports[${i}];`)
    }
    edits.push([imp.ss, imp.se, statement.replace(/[^\n]/g, '')])
  }
  if (expected !== undefined && specifiers.length !== expected)
    fail(`found ${specifiers.length} import statements, esbuild reports ${expected}`)
  const exports = [...text.matchAll(/^export\s*\{([^}]*)\};?[ \t]*$/gm)]
  if (exports.length !== 1) fail(`${exports.length} export statements`)
  const pairs = exports[0][1]
    .split(',')
    .map((x) => x.trim())
    .filter(Boolean)
    .map((item) => {
      const pair = /^([\w$]+)(?:\s+as\s+([\w$]+))?$/.exec(item)
      if (!pair) fail(`an export form not handled: ${exports[0][0]}`)
      return pair[2] ? `${pair[2]}: ${pair[1]}` : pair[1]
    })
  edits.push([
    exports[0].index,
    exports[0].index + exports[0][0].length,
    `return { ${pairs.join(', ')} };${exports[0][0].replace(/[^\n]/g, '')}`,
  ])
  edits.sort((x, y) => x[0] - y[0])
  let body = ''
  let at = 0
  for (const [start, end, replacement] of edits) {
    if (start < at) fail('overlapping imports')
    body += text.slice(at, start) + replacement
    at = end
  }
  body += text.slice(at)
  if (/^export\b/m.test(body) || /\bimport\.meta\b/.test(body)) fail('an export or import.meta left over')
  const script = `(async function (__imports, __import) {"use strict";${decls.join('')}${body}\n})`
  // esbuild escapes non-ASCII characters in strings but not in regular expression literals; one
  // such character makes V8 hold the whole script as a two-byte string (twice the memory, a
  // slower decode and scan at every boot): worth a warning naming the line.
  const warnings = []
  const wide = /[^\x00-\x7f]/.exec(body)
  if (wide) {
    const line = body.slice(0, wide.index).split('\n').length
    warnings.push(
      `prelink: warning: ${id} has a non-ASCII character on line ${line} (${JSON.stringify(body.split('\n')[line - 1].trim().slice(0, 120))}); write it as an escape so the script stays one-byte`,
    )
  }
  // A syntax check only (nothing runs): a script that does not parse fails the build here.
  new Script(script, { filename: `${id}.script.js` })
  const imports =
    '// Generated by scripts/prelink.mjs: the static imports of the stack script beside this file, in\n' +
    '// order, and the import() the script uses for its dynamic imports.\n' +
    specifiers.map((s, i) => `import * as i${i} from ${JSON.stringify(s)}\n`).join('') +
    `export const imports = [${specifiers.map((_, i) => `i${i}`).join(', ')}]\n` +
    'export const load = (specifier) => import(specifier)\n'
  return { script, imports, warnings }
}
