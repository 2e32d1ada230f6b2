// The local patch of schemastery (patches/schemastery@3.18.0.patch, note
// .agents/notes/schemastery-patch.md) makes building a schema cheaper: the per-schema closure is no
// longer renamed with defineProperty (which left every schema a dictionary-mode object), and a copy
// keeps the bound toString it copied instead of binding it again. Everything a caller can see must
// stay as schemastery documents it; these tests pin that, through both entries of the package
// (lib/index.cjs is what Node and the prelinked files load; lib/index.mjs is the `module` entry).
import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import { pathToFileURL } from 'node:url'
import type SchemaType from 'schemastery'
import { describe, expect, it } from 'vitest'

type S = typeof SchemaType
const require = createRequire(import.meta.url)
const cjsFile = require.resolve('schemastery')
const mjsFile = join(dirname(cjsFile), 'index.mjs')
const cjs = require(cjsFile) as S
const mjs = ((await import(pathToFileURL(mjsFile).href)) as { default: S }).default

it('the bare import and the prelinked files load the patched lib/index.cjs', async () => {
  expect(cjsFile.endsWith(join('schemastery', 'lib', 'index.cjs'))).toBe(true)
  expect(((await import('schemastery')) as { default: S }).default).toBe(cjs)
  for (const file of [cjsFile, mjsFile]) expect(readFileSync(file, 'utf8')).toContain('dsh patch')
})

describe.each([
  ['lib/index.cjs', cjs],
  ['lib/index.mjs', mjs],
])('schemastery %s', (_entry, Schema) => {
  it('a schema is a function that validates and fills defaults when called', () => {
    const port = Schema.natural().max(65535).default(8080)
    expect(typeof port).toBe('function')
    expect(port()).toBe(8080)
    expect(port(22)).toBe(22)
    expect(() => port(1.5)).toThrow(/expected number multiple of 1 but got 1.5/)
    expect(() => port(70000)).toThrow(Schema.ValidationError)
    const config = Schema.object({
      name: Schema.string().required(),
      tags: Schema.array(String).default(['a']),
      mode: Schema.union(['fast', 'slow'] as const).default('fast'),
    })
    expect(config({ name: 'x' })).toEqual({ name: 'x', tags: ['a'], mode: 'fast' })
    expect(() => config({})).toThrow('$.name missing required value')
    // The closure keeps the name and arity schemastery's own source gives it.
    expect(port.name).toBe('schema')
    expect(port.length).toBe(1)
    expect(Object.hasOwn(port, 'prototype')).toBe(true)
    expect(Object.getOwnPropertyDescriptor(port, 'name')).toEqual({
      value: 'schema',
      writable: false,
      enumerable: false,
      configurable: true,
    })
  })

  it('schemas are instances of Schema, copies too, and Schema.from passes them through', () => {
    const base = Schema.string()
    const copies = [
      base,
      base.description('d'),
      base.default('x').required(),
      new Schema({ type: 'string' }),
      Schema(base),
    ]
    for (const schema of copies) {
      expect(schema).toBeInstanceOf(Schema)
      expect(Object.getPrototypeOf(schema)).toBe(Schema.prototype)
      expect((schema as unknown as Record<symbol, unknown>)[Symbol.for('schemastery')]).toBe(true)
      expect(Schema.from(schema)).toBe(schema)
    }
    // Schema.is(constructor) checks instances, and names the class when serialized.
    class Widget {}
    const widget = Schema.is(Widget)
    expect(widget(new Widget())).toBeInstanceOf(Widget)
    expect(() => widget({})).toThrow('expected Widget but got [object Object]')
    expect(JSON.parse(JSON.stringify(widget)).refs[widget.uid].constructor).toBe('Widget')
  })

  it('uid is an own, hidden, read-only number, new for every schema and every copy', () => {
    const a = Schema.string()
    const b = a.description('b')
    const c = new Schema({ type: 'number' })
    const uids = [a.uid, b.uid, c.uid]
    for (const uid of uids) expect(typeof uid).toBe('number')
    expect(new Set(uids).size).toBe(3)
    expect(b.uid).toBeGreaterThan(a.uid)
    expect(Object.getOwnPropertyDescriptor(b, 'uid')).toEqual({
      value: b.uid,
      writable: false,
      enumerable: false,
      configurable: false,
    })
    expect(Object.keys(b)).not.toContain('uid')
    expect(() => {
      ;(b as { uid: number }).uid = 1
    }).toThrow(TypeError)
  })

  it('meta defaults to a new object, and a builder copies it instead of changing the source', () => {
    const bare = new Schema({ type: 'string' })
    expect(bare.meta).toEqual({})
    expect(new Schema({ type: 'string' }).meta).not.toBe(bare.meta)
    expect(Schema.object({}).meta).toEqual({ default: {} })
    expect(Schema.array(Number).meta).toEqual({ default: [] })
    const described = bare.description('d')
    expect(described.meta).toEqual({ description: 'd' })
    expect(bare.meta).toEqual({})
    const kept = new Schema({ type: 'string', meta: { required: true } })
    expect(kept.meta).toEqual({ required: true })
    // The own enumerable keys stay those of the options, then meta and toString.
    expect(Object.keys(bare)).toEqual(['type', 'meta', 'toString'])
    expect(Object.keys(described)).toEqual(['type', 'meta', 'toString'])
  })

  it('toString formats the schema, also called detached, and also for copies', () => {
    const union = Schema.union([Schema.const('a'), Schema.number()])
    const { toString: format } = union
    expect(format()).toBe('"a" | number')
    expect(Object.hasOwn(union, 'toString')).toBe(true)
    expect(union.toString).not.toBe(Schema.prototype.toString)
    const object = Schema.object({ a: Schema.string().required(), b: Schema.array(Schema.union([Number, String])) })
    const copy = object.description('d').default({ a: 'x' } as never)
    const detached = copy.toString
    expect(detached()).toBe('{ a: string, b?: (number | string)[] }')
    expect(`${copy}`).toBe('{ a: string, b?: (number | string)[] }')
    expect(detached.call(Schema.number())).toBe('{ a: string, b?: (number | string)[] }')
    // A union's error names the union through its toString.
    expect(() => union(true as never)).toThrow('expected "a" | number but got true')
    // A schema built from plain options binds its own toString, as does one given a toString.
    const plain = new Schema({ type: 'boolean' })
    expect(plain.toString.call(undefined)).toBe('boolean')
    const custom = new Schema({
      type: 'boolean',
      toString(this: { type: string }) {
        return `custom ${this.type}`
      },
    } as never)
    expect(custom.toString.call(undefined)).toBe('custom boolean')
  })

  it('a copy shares its source bound toString (the one visible change of the patch)', () => {
    const source = Schema.string()
    expect(source.description('x').toString).toBe(source.toString)
    expect(source.toString.name).toBe('bound toString')
    expect(Schema.prototype.toString.name).toBe('toString')
  })

  it('implements Standard Schema through ~standard', () => {
    const schema = Schema.object({ n: Schema.number().min(1) })
    const standard = schema['~standard']
    expect(standard.version).toBe(1)
    expect(standard.vendor).toBe('schemastery')
    expect(standard.validate.name).toBe('validate')
    expect(standard.validate({ n: 2 })).toEqual({ value: { n: 2 } })
    expect(standard.validate({ n: 0 })).toEqual({
      issues: [{ message: '$.n expected number >= 1 but got 0', path: ['n'] }],
    })
    expect(Object.keys(schema)).not.toContain('~standard')
  })

  it('JSON round-trips through new Schema(json), shared and recursive schemas by refs', () => {
    const shared = Schema.string().description('shared').default('s')
    const config = Schema.object({
      a: shared,
      b: shared,
      list: Schema.tuple([Number, Schema.const('x')]),
      dict: Schema.dict(Schema.boolean(), Schema.union(['k1', 'k2'])),
      flags: Schema.bitset({ r: 1, w: 2 }),
      len: Schema.transform(Schema.string(), (value: string) => value.length),
    }).description('top')
    const json = JSON.parse(JSON.stringify(config))
    expect(json.uid).toBe(config.uid)
    expect(Object.keys(json.refs)).toContain(String(shared.uid))
    expect(json.refs[config.uid].dict.a).toBe(shared.uid)
    expect(json.refs[config.uid].dict.b).toBe(shared.uid)
    const revived = new Schema(json)
    expect(revived).toBeInstanceOf(Schema)
    expect(revived.toString()).toBe(config.toString())
    expect(revived.meta).toEqual(config.meta)
    expect(revived.dict!.a).toBe(revived.dict!.b)
    expect(revived.dict!.a.meta).toEqual({ description: 'shared', default: 's' })
    const input = { list: [1, 'x'], dict: { k1: true }, flags: ['w'], len: 'four' }
    expect(revived(structuredClone(input))).toEqual(config(structuredClone(input) as never))
    expect(revived({ ...structuredClone(input), len: 'ab' }).len).toBe(2)
    expect(() => revived({ ...structuredClone(input), dict: { k3: true } })).toThrow(
      'expected "k1" | "k2" but got "k3"',
    )
    expect(() => revived({ ...structuredClone(input), list: [] })).toThrow('$.list[0] missing required value')
    // A second round trip gives the same JSON (up to the new uids).
    const again = JSON.parse(JSON.stringify(revived))
    expect(Object.keys(again.refs).length).toBe(Object.keys(json.refs).length)

    interface Tree {
      name?: string
      children?: Tree[]
    }
    const tree: SchemaType<Tree> = Schema.lazy(() =>
      Schema.object({ name: Schema.string(), children: Schema.array(tree) }),
    )
    const treeJson = JSON.parse(JSON.stringify(tree))
    const revivedTree = new Schema(treeJson) as SchemaType<Tree>
    expect(revivedTree({ name: 'r', children: [{ name: 'c', children: [] }] })).toEqual({
      name: 'r',
      children: [{ name: 'c', children: [] }],
    })
    expect(() => revivedTree({ children: [{ name: 1 }] } as never)).toThrow(
      '$.children[0].name expected string but got 1',
    )
  })
})
