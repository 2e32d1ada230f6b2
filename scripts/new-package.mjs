#!/usr/bin/env node
// Scaffolds packages/<family>/<name>/ with the conventional package.json, src/index.ts stub dir and test dir.
// usage: node scripts/new-package.mjs <family>/<dir> [@dsh/dep ...] [--dep npm-name@range ...]
import { mkdirSync, writeFileSync, existsSync } from 'node:fs'
import { join } from 'node:path'

const [target, ...rest] = process.argv.slice(2)
if (!target?.includes('/')) {
  console.error('usage: node scripts/new-package.mjs <family>/<dir> [@dsh/dep ...] [--dep name@range ...]')
  process.exit(2)
}
const dir = join('packages', target)
const name = `@dsh/${target.split('/')[1]}`
const dependencies = {}
for (let i = 0; i < rest.length; i++) {
  if (rest[i] === '--dep') {
    const spec = rest[++i]
    const at = spec.lastIndexOf('@')
    dependencies[spec.slice(0, at)] = spec.slice(at + 1)
  } else dependencies[rest[i]] = 'workspace:*'
}
mkdirSync(join(dir, 'src'), { recursive: true })
mkdirSync(join(dir, 'test'), { recursive: true })
const pkgPath = join(dir, 'package.json')
if (existsSync(pkgPath)) {
  console.error(`${pkgPath} exists; not overwriting`)
  process.exit(1)
}
const pkg = {
  name,
  version: '0.1.0',
  type: 'module',
  license: 'MIT',
  // `development` (vitest, DSH_DEV=1) runs sources; everything else the transpiled dist/ (scripts/build.mjs).
  exports: { '.': { development: './src/index.ts', default: './dist/index.js' }, './package.json': './package.json' },
  dependencies,
  peerDependencies: { cordis: '4.0.0-rc.10', schemastery: '3.18.0' },
  devDependencies: { cordis: '4.0.0-rc.10', schemastery: '3.18.0' },
}
writeFileSync(pkgPath, JSON.stringify(pkg, null, 2) + '\n')
console.log(`created ${pkgPath}`)
