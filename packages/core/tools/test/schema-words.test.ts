// The rest of what a tool's parameter schema can say, in the words the model reads: the less
// common keywords, a composite failure, the cap on reported lines, property names that need
// escaping in a JSON pointer, and each structural refusal at registration. schema.test.ts covers
// the common failures; mutation testing (`pnpm mutation tools`) showed these unpinned.
import { describe, expect, it } from 'vitest'
import { SchemaCompiler, schemaProblem } from '../src/schema.ts'

const compile = (properties: Record<string, unknown>, extra: Record<string, unknown> = {}) =>
  new SchemaCompiler().compile('t', { type: 'object', properties, ...extra } as never)

describe('validation messages', () => {
  it('names each less common keyword', () => {
    const validate = compile({
      c: { const: 'fixed' },
      gt: { type: 'number', exclusiveMinimum: 1 },
      lt: { type: 'number', exclusiveMaximum: 5 },
      short: { type: 'string', maxLength: 2 },
      few: { type: 'array', minItems: 2 },
      code: { type: 'string', pattern: '^[A-Z]+$' },
      either: { anyOf: [{ type: 'string' }, { type: 'integer' }] },
      one: { oneOf: [{ type: 'string' }, { type: 'string', minLength: 1 }] },
      many: { type: ['string', 'null'] },
      nope: { not: { type: 'string' } },
    })
    expect(validate({ c: 'other', gt: 1, lt: 5, short: 'abc', few: [1], code: 'abc' })).toEqual([
      '/c: must be "fixed"',
      '/gt: must be > 1',
      '/lt: must be < 5',
      '/short: must have at most 2 characters',
      '/few: must have at least 2 items',
      '/code: must match the pattern "^[A-Z]+$"',
    ])
    // A composite names itself first, then what each alternative wanted.
    expect(validate({ either: true })![0]).toBe('/either: must match at least one of the allowed shapes')
    expect(validate({ one: 'x' })![0]).toBe('/one: must match exactly one of the allowed shapes')
    // A list of types, and a keyword without a sentence of its own (the validator's, without its period).
    const lines = validate({ many: 3, nope: 's' })!
    expect(lines[0]).toBe('/many: must be string or null')
    expect(lines[1]).toMatch(/^\/nope: \S.*[^.]$/)
    expect(lines).toHaveLength(2)
  })

  it('reports at most eight lines and says how many more there were', () => {
    const properties = Object.fromEntries(Array.from({ length: 11 }, (_, i) => [`p${i}`, { type: 'string' }]))
    const validate = compile(properties)
    const lines = validate(Object.fromEntries(Array.from({ length: 11 }, (_, i) => [`p${i}`, i])))!
    expect(lines).toHaveLength(9)
    expect(lines.slice(0, 8)).toEqual(Array.from({ length: 8 }, (_, i) => `/p${i}: must be string`))
    expect(lines[8]).toBe('(3 more)')
    // Exactly eight: no "more" line.
    const eight = compile(Object.fromEntries(Array.from({ length: 8 }, (_, i) => [`p${i}`, { type: 'string' }])))
    expect(eight(Object.fromEntries(Array.from({ length: 8 }, (_, i) => [`p${i}`, i])))).toHaveLength(8)
  })

  it('a property name with "/" or "~" is found in the schema through its escaped pointer', () => {
    const validate = compile({ 'a/b': { type: 'integer', minimum: 3 }, 'c~d': { type: 'integer', maximum: 1 } })
    expect(validate({ 'a/b': 1, 'c~d': 2 })).toEqual(['/a~1b: must be >= 3', '/c~0d: must be <= 1'])
  })

  it('a failure inside an array item or a nested object names its full path; the same line is said once', () => {
    const validate = compile({
      list: { type: 'array', items: { type: 'object', required: ['id'], properties: { id: { type: 'integer' } } } },
    })
    expect(validate({ list: [{ id: 1 }, {}, { id: 'x' }] })).toEqual([
      '/list/1: missing required property "id"',
      '/list/2/id: must be integer',
    ])
    const root = new SchemaCompiler().compile('t', { type: 'object', required: ['a', 'b'] })
    expect(root({})).toEqual(['(root): missing required property "a"', '(root): missing required property "b"'])
    expect(root([])).toEqual(['(root): must be object'])
  })
})

describe('structural refusals at registration', () => {
  it('names the first mistake with its path', () => {
    expect(schemaProblem(true)).toBeUndefined()
    expect(schemaProblem(null)).toBe('(root): a schema must be an object or a boolean')
    expect(schemaProblem([], '/x')).toBe('/x: a schema must be an object or a boolean')
    expect(schemaProblem({ type: [] })).toBe('/type: must be a JSON type or a list of them, not []')
    expect(schemaProblem({ type: ['string', 3] })).toBe(
      '/type: must be a JSON type or a list of them, not ["string",3]',
    )
    expect(schemaProblem({ required: 'a' })).toBe('/required: must be a list of property names')
    expect(schemaProblem({ required: ['a', 1] })).toBe('/required: must be a list of property names')
    expect(schemaProblem({ enum: 'a' })).toBe('/enum: must be a list')
    expect(schemaProblem({ enum: ['a'] })).toBeUndefined()
    expect(schemaProblem({ pattern: 5 })).toBe('/pattern: must be a regular expression string')
    expect(schemaProblem({ pattern: '\\p{L}+' })).toBeUndefined()
    expect(schemaProblem({ minLength: 0 })).toBeUndefined()
    expect(schemaProblem({ maxItems: -1 })).toBe('/maxItems: must be a non-negative integer')
    expect(schemaProblem({ minProperties: 1.5 })).toBe('/minProperties: must be a non-negative integer')
    expect(schemaProblem({ properties: null })).toBe('/properties: must be an object of schemas')
    expect(schemaProblem({ properties: [] })).toBe('/properties: must be an object of schemas')
    expect(schemaProblem({ $defs: 'x' })).toBe('/$defs: must be an object of schemas')
    expect(schemaProblem({ properties: { a: { properties: { b: 3 } } } })).toBe(
      '/properties/a/properties/b: a schema must be an object or a boolean',
    )
    expect(schemaProblem({ items: [{ type: 'string' }, 7] })).toBe('/items/1: a schema must be an object or a boolean')
    expect(schemaProblem({ items: 7 })).toBe('/items: a schema must be an object or a boolean')
    expect(schemaProblem({ additionalItems: 'x' })).toBe('/additionalItems: a schema must be an object or a boolean')
    expect(schemaProblem({ not: { type: 'nope' } })).toBe(
      '/not/type: must be a JSON type or a list of them, not "nope"',
    )
    expect(schemaProblem({ anyOf: [] })).toBe('/anyOf: must be a non-empty list of schemas')
    expect(schemaProblem({ oneOf: {} })).toBe('/oneOf: must be a non-empty list of schemas')
    expect(schemaProblem({ allOf: [{}, 3] })).toBe('/allOf/1: a schema must be an object or a boolean')
  })

  it('the compiler refuses parameters that are not an object schema, naming the tool', () => {
    const compiler = new SchemaCompiler()
    expect(() => compiler.compile('t', null as never)).toThrow(
      new TypeError('tool "t": parameters must be a JSON Schema object'),
    )
    expect(() => compiler.compile('t', [] as never)).toThrow('tool "t": parameters must be a JSON Schema object')
    expect(() => compiler.compile('t', { type: 'array' } as never)).toThrow(
      'tool "t": parameters must have type "object" (got "array")',
    )
    expect(() => compiler.compile('t', { type: 'object', properties: { a: 1 } } as never)).toThrow(
      'tool "t": parameters are not a valid JSON Schema: /properties/a: a schema must be an object or a boolean',
    )
    // A $schema naming a draft is ignored.
    const validate = compiler.compile('t', {
      $schema: 'https://json-schema.org/draft/2020-12/schema',
      type: 'object',
      properties: { n: { type: 'integer' } },
    } as never)
    expect(validate({ n: 'x' })).toEqual(['/n: must be integer'])
  })
})
