// What a user may name in `dsh plugin add|update`: an npm package (optionally with a version or
// tag), a local package directory, or a packed tarball. Local specs become absolute paths so the
// install does not depend on where the profile directory is.
import { existsSync, readFileSync, statSync } from 'node:fs'
import { gunzipSync } from 'node:zlib'
import { isAbsolute, join, resolve } from 'node:path'
import { PluginError } from './errors.ts'

export type SpecKind = 'npm' | 'dir' | 'tarball'

export interface PluginSpec {
  kind: SpecKind
  /** The package name (read from the directory or tarball for local specs). */
  name: string
  /** The argument given to `npm install`. */
  install: string
  /** What the user typed. */
  raw: string
}

/** npm's rules, loosely: an optional scope, then a lowercase URL-safe name. */
const NPM_NAME = /^(?:@[a-z0-9][a-z0-9._~-]*\/)?[a-z0-9][a-z0-9._~-]*$/

export function isPackageName(name: string): boolean {
  return NPM_NAME.test(name) && name.length <= 214
}

function readManifestName(text: string, where: string): string {
  let pkg: { name?: unknown }
  try {
    pkg = JSON.parse(text) as { name?: unknown }
  } catch (error) {
    throw new PluginError(`${where}: invalid JSON: ${(error as Error).message}`)
  }
  if (typeof pkg.name !== 'string' || !isPackageName(pkg.name)) {
    throw new PluginError(`${where}: field "name" is missing or not a valid package name`)
  }
  return pkg.name
}

/** Largest tarball read (compressed and unpacked): a plugin package is far smaller. */
const TARBALL_LIMIT = 256 << 20

/**
 * The package.json inside a tarball: npm packs it as `package/package.json` (others use another
 * top folder). Read in this process (gzip, then the 512-byte tar headers), so naming a tarball
 * starts no program.
 */
function tarballManifest(file: string): string {
  let archive: Buffer
  try {
    const raw = readFileSync(file)
    archive = raw[0] === 0x1f && raw[1] === 0x8b ? gunzipSync(raw, { maxOutputLength: TARBALL_LIMIT }) : raw
  } catch (error) {
    throw new PluginError(`${file}: not a readable .tgz package (${firstLine(error)})`)
  }
  const text = (bytes: Buffer) => bytes.toString('utf8').replace(/\0.*$/s, '')
  let longName: string | undefined
  let sawEntry = false
  for (let at = 0; at + 512 <= archive.length; ) {
    const header = archive.subarray(at, at + 512)
    if (header.every((byte) => byte === 0)) break
    const size = Number.parseInt(text(header.subarray(124, 136)).trim() || '0', 8)
    const sum = Number.parseInt(text(header.subarray(148, 156)).trim(), 8)
    let check = 0
    for (let i = 0; i < 512; i++) check += i >= 148 && i < 156 ? 0x20 : header[i]
    if (!Number.isFinite(size) || size < 0 || sum !== check) break
    sawEntry = true
    const type = String.fromCharCode(header[156] || 0x30)
    const body = archive.subarray(at + 512, at + 512 + size)
    at += 512 + Math.ceil(size / 512) * 512
    if (type === 'L') {
      longName = text(body)
      continue
    }
    const prefix = text(header.subarray(345, 500))
    const name = (
      longName ?? (prefix ? `${prefix}/${text(header.subarray(0, 100))}` : text(header.subarray(0, 100)))
    ).replace(/^\.\//, '')
    longName = undefined
    if ((type === '0' || type === '\0') && /^[^/]+\/package\.json$/.test(name)) return body.toString('utf8')
  }
  if (!sawEntry) throw new PluginError(`${file}: not a readable .tgz package (no tar entries found)`)
  throw new PluginError(`${file}: the tarball has no <folder>/package.json at its top`)
}

const firstLine = (error: unknown) => String((error as Error)?.message ?? error).split('\n')[0]

/** Classifies `raw`; relative paths resolve against `cwd`. Throws a PluginError (exit 2) for a spec that is none of the three. */
export function parseSpec(raw: string, cwd: string): PluginSpec {
  const looksLocal =
    raw.startsWith('.') ||
    isAbsolute(raw) ||
    raw.startsWith('~') ||
    /\.(tgz|tar\.gz|tar)$/.test(raw) ||
    raw.startsWith('file:')
  if (looksLocal) {
    const path = resolve(cwd, raw.replace(/^file:/, ''))
    if (!existsSync(path)) throw new PluginError(`${raw}: no such file or directory (${path})`, 2)
    if (statSync(path).isDirectory()) {
      const pkg = join(path, 'package.json')
      if (!existsSync(pkg))
        throw new PluginError(`${raw}: the directory has no package.json, so it is not a package`, 2)
      return { kind: 'dir', name: readManifestName(readFileSync(pkg, 'utf8'), pkg), install: path, raw }
    }
    return {
      kind: 'tarball',
      name: readManifestName(tarballManifest(path), `${raw} (package.json inside)`),
      install: path,
      raw,
    }
  }
  // name, name@version, @scope/name, @scope/name@range
  const at = raw.indexOf('@', 1)
  const name = at > 0 ? raw.slice(0, at) : raw
  if (!isPackageName(name) || (at > 0 && at === raw.length - 1)) {
    throw new PluginError(
      `${JSON.stringify(raw)} is not a package name, a directory or a tarball (e.g. dsh-plugin-hello, dsh-plugin-hello@1.2.0, ./my-plugin, ./my-plugin-0.1.0.tgz)`,
      2,
    )
  }
  return { kind: 'npm', name, install: raw, raw }
}
