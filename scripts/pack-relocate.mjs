// @ts-check
// Shipped in the `dsh` npm package as scripts/relocate.mjs (scripts/pack.mjs copies it there) and
// imported first by the package's bins (bin/*.mjs). The prelinked start-up files (prelinked/)
// name files by absolute path, those of the directory scripts/pack.mjs built them in. On the
// first start after an install (prelinked/pack.json names another directory) this moves every
// such path to where npm put the package and refreshes the file identities app-boot checks
// (rows.json: device, inode, size, mtime; each manifest's inputs: size, mtime); every later start
// reads one small file and returns. When that cannot be done (a read-only install, an unusual
// install path, a file the stacks import absent because npm laid the dependencies out
// differently, as `npx` does) prelinked/ is left unused or removed: app-boot then loads the
// packages file by file, which is slower to start and otherwise the same. It never stops the bin.
// A first start, not an npm install script: npm 11 runs no install script of a global package
// unless the user allows it.
import {
  existsSync,
  readFileSync,
  readdirSync,
  realpathSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs'
import { join, sep } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'

/** Optional add-ons: the stacks load them lazily, so their absence does not spoil the stacks. */
const OPTIONAL = ['better-sqlite3', 'node-pty']

const here = realpathSync(fileURLToPath(new URL('..', import.meta.url)))
const to = here.endsWith(sep) ? here : `${here}${sep}`
const dir = join(to, 'prelinked')

class Unusable extends Error {}
/** @param {string} why @returns {never} */
function drop(why) {
  throw new Unusable(why)
}

/** @param {string} d @returns {string[]} */
const walk = (d) =>
  readdirSync(d, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? walk(join(d, e.name)) : [join(d, e.name)]))

function main() {
  let from
  try {
    from = JSON.parse(readFileSync(join(dir, 'pack.json'), 'utf8')).root
  } catch {
    return // no prelinked files (removed before), or a checkout
  }
  if (from === to) return
  if (typeof from !== 'string' || !from.endsWith(sep)) return drop('prelinked/pack.json names no build directory')
  // The new path is written into JavaScript and JSON strings as it is: keep to plain characters.
  if (!/^[\w./@+-]+$/.test(to))
    return drop(`the install path ${to} has characters the start-up files cannot hold verbatim`)
  const files = walk(dir).filter((f) => /\.(m?js|json)$/.test(f))
  if (from !== to) {
    const fromUrl = pathToFileURL(from).href
    const toUrl = pathToFileURL(to).href
    for (const file of files) {
      const text = readFileSync(file, 'utf8')
      const moved = text.replaceAll(fromUrl, toUrl).replaceAll(from, to)
      if (moved !== text) {
        writeFileSync(`${file}.tmp`, moved)
        renameSync(`${file}.tmp`, file)
      }
    }
  }
  // Every file the stacks import by URL must be here (npm may lay dependencies out differently
  // than the build did, e.g. a newer transitive version nested elsewhere).
  for (const file of files.filter((f) => /\.m?js$/.test(f))) {
    for (const m of readFileSync(file, 'utf8').matchAll(/file:\/\/\/[^"'`\s)]+/g)) {
      const path = fileURLToPath(m[0])
      if (OPTIONAL.some((name) => path.includes(`${sep}node_modules${sep}${name}${sep}`))) continue
      if (!existsSync(path)) return drop(`${path} is not installed`)
    }
  }
  // The identities app-boot compares with what it sees at boot.
  const rowsFile = join(dir, 'rows.json')
  if (existsSync(rowsFile)) {
    const table = JSON.parse(readFileSync(rowsFile, 'utf8'))
    table.root = to
    for (const entries of Object.values(table.layers ?? {})) {
      for (const entry of Object.values(entries)) {
        const st = statSync(entry[2], { throwIfNoEntry: false })
        if (!st) return drop(`${entry[2]} is not installed`)
        entry[3] = st.dev
        entry[4] = st.ino
        entry[5] = st.size
        entry[6] = st.mtimeMs
        entry[8] = realpathSync(entry[7])
      }
    }
    writeFileSync(rowsFile, `${JSON.stringify(table)}\n`)
  }
  for (const file of files.filter((f) => f.endsWith(`${sep}manifest.json`))) {
    const manifest = JSON.parse(readFileSync(file, 'utf8'))
    manifest.root = to
    for (const input of manifest.inputs ?? []) {
      const st = statSync(join(to, input[0]), { throwIfNoEntry: false })
      if (!st) return drop(`${input[0]} is not installed`)
      input[1] = st.size
      input[2] = st.mtimeMs
    }
    writeFileSync(file, `${JSON.stringify(manifest)}\n`)
  }
  writeFileSync(join(dir, 'pack.json.tmp'), `${JSON.stringify({ note: 'moved by scripts/relocate.mjs', root: to })}\n`)
  renameSync(join(dir, 'pack.json.tmp'), join(dir, 'pack.json'))
}

try {
  main()
} catch (error) {
  const why = error instanceof Error ? error.message : String(error)
  // Not writable (a global install owned by root): leave the files; the boot ignores them.
  if (!(error instanceof Unusable) && /EACCES|EPERM|EROFS/.test(why)) {
    if (process.env.DSH_DEBUG) process.stderr.write(`dsh: prelinked start-up files not moved (${why})\n`)
  } else {
    try {
      rmSync(dir, { recursive: true, force: true })
    } catch {
      // read-only: the boot ignores files built elsewhere
    }
    if (process.env.DSH_DEBUG)
      process.stderr.write(`dsh: prelinked start-up files not usable (${why}); packages load one by one\n`)
  }
}
