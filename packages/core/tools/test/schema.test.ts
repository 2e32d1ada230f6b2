import { describe, expect, it } from 'vitest'
import { SchemaCompiler, schemaProblem } from '../src/schema.ts'

describe('schema structural check (registration)', () => {
  it('accepts ordinary tool schemas', () => {
    expect(
      schemaProblem({
        type: 'object',
        properties: {
          path: { type: 'string', minLength: 1 },
          tags: { type: 'array', items: { type: 'string' } },
          mode: { enum: ['a', 'b'] },
          either: { anyOf: [{ type: 'string' }, { type: 'null' }] },
          nested: { type: ['object', 'null'], properties: { x: { type: 'integer' } }, additionalProperties: false },
        },
        required: ['path'],
      }),
    ).toBeUndefined()
  })

  it('names the path of the first mistake', () => {
    expect(schemaProblem({ type: 'object', properties: { n: { type: 'strnig' } } })).toBe(
      '/properties/n/type: must be a JSON type or a list of them, not "strnig"',
    )
    expect(schemaProblem({ type: 'object', required: 'path' })).toBe('/required: must be a list of property names')
    expect(schemaProblem({ type: 'object', properties: { a: { type: 'array', items: { type: 5 } } } })).toMatch(
      /^\/properties\/a\/items\/type:/,
    )
    expect(schemaProblem({ type: 'object', properties: { a: { minLength: -1 } } })).toMatch(
      /minLength: must be a non-negative integer/,
    )
    expect(schemaProblem({ type: 'object', properties: [] })).toMatch(/properties: must be an object of schemas/)
    expect(schemaProblem({ type: 'object', properties: { a: { oneOf: [] } } })).toMatch(
      /oneOf: must be a non-empty list/,
    )
    expect(schemaProblem({ type: 'object', properties: { a: { pattern: 5 } } })).toMatch(
      /pattern: must be a regular expression string/,
    )
    expect(schemaProblem({ type: 'object', properties: { a: { pattern: '(' } } })).toMatch(
      /pattern: must be a regular expression string/,
    )
  })
})

describe('SchemaCompiler', () => {
  it('validates arguments on first use and reports a schema that only fails to compile then', () => {
    const compiler = new SchemaCompiler()
    const validate = compiler.compile('t', { type: 'object', properties: { n: { type: 'integer' } }, required: ['n'] })
    expect(validate({ n: 1 })).toBeUndefined()
    expect(validate({})).toEqual(['(root): missing required property "n"'])
    // Structurally fine, but the $ref points nowhere: found when the validator first runs.
    const broken = compiler.compile('u', { type: 'object', properties: { s: { $ref: '#/definitions/missing' } } })
    expect(broken({ s: 'x' })?.[0]).toMatch(
      /^\(schema\) the tool's parameter schema cannot be applied: Unresolved \$ref/,
    )
  })

  it('describes the common failures in the words the model sees', () => {
    const validate = new SchemaCompiler().compile('t', {
      type: 'object',
      properties: {
        path: { type: 'string', minLength: 1 },
        count: { type: 'integer', minimum: 0, maximum: 9 },
        mode: { enum: ['a', 'b'] },
        tags: { type: 'array', items: { type: 'string' }, maxItems: 2 },
        nested: { type: 'object', properties: { x: { type: 'number' } }, additionalProperties: false },
      },
      required: ['path'],
      additionalProperties: false,
    })
    expect(
      validate({ path: '', count: 12, mode: 'c', tags: ['x', 1, 'z'], nested: { x: 'no', y: 1 }, extra: true }),
    ).toEqual([
      '/path: must have at least 1 characters',
      '/count: must be <= 9',
      '/mode: must be one of ["a","b"]',
      '/tags: must have at most 2 items',
      '/tags/1: must be string',
      '/nested/x: must be number',
      '/nested: unexpected property "y"',
      '(root): unexpected property "extra"',
    ])
  })
})
