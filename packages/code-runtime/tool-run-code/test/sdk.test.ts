import { describe, expect, it } from 'vitest'
import { callExpression, renderDeclarations, schemaType, sdkSection } from '../src/index.ts'

describe('generated TypeScript API', () => {
  it('maps JSON Schema to TypeScript types', () => {
    expect(schemaType({ type: 'string' })).toBe('string')
    expect(schemaType({ type: 'integer' })).toBe('number')
    expect(schemaType({ enum: ['a', 1, null] })).toBe('"a" | 1 | null')
    expect(schemaType({ const: 'x' })).toBe('"x"')
    expect(schemaType({ type: ['string', 'null'] })).toBe('string | null')
    expect(schemaType({ type: 'array', items: { anyOf: [{ type: 'string' }, { type: 'number' }] } })).toBe(
      '(string | number)[]',
    )
    expect(schemaType({ type: 'array', items: [{ type: 'string' }, { type: 'boolean' }] })).toBe('[string, boolean]')
    expect(schemaType({ type: 'object', additionalProperties: { type: 'number' } })).toBe(
      '{\n  [key: string]: number\n}',
    )
    expect(schemaType({ type: 'object' })).toBe('Record<string, unknown>')
    expect(schemaType({ $ref: '#/definitions/x' })).toBe('unknown')
    expect(
      schemaType({
        type: 'object',
        properties: { 'file-path': { type: 'string' }, n: { type: 'number', description: 'count' } },
        required: ['file-path'],
      }),
    ).toBe('{\n  "file-path": string\n  /** count */\n  n?: number\n}')
    expect(
      schemaType({
        allOf: [
          { type: 'object', properties: { a: { type: 'string' } } },
          { type: 'object', properties: { b: { type: 'string' } } },
        ],
      }),
    ).toBe('{\n  a?: string\n} & {\n  b?: string\n}')
  })

  it('renders one member per tool; tools without required arguments take optional args; odd names are quoted', () => {
    const text = renderDeclarations([
      { name: 'list_agents', description: 'List them.\nSecond line.', parameters: { type: 'object', properties: {} } },
      {
        name: 'my-tool',
        description: '',
        parameters: { type: 'object', properties: { q: { type: 'string' } }, required: ['q'] },
      },
    ])
    expect(text).toBe(
      [
        'declare const tools: {',
        '  /**',
        '   * List them.',
        '   * Second line.',
        '   */',
        '  list_agents(args?: Record<string, unknown>): Promise<string>',
        '  "my-tool"(args: {',
        '    q: string',
        '  }): Promise<string>',
        '}',
      ].join('\n'),
    )
    expect(callExpression('tools', 'my-tool')).toBe('tools["my-tool"]')
    expect(sdkSection([], 'native')).toBe('')
  })
})
