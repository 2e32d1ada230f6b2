import Schema from 'schemastery'
import { describe, expect, it } from 'vitest'
import {
  ApiError,
  checkParams,
  commandsExecute,
  defineMethod,
  SessionRowSchema,
  sessionContracts,
  sessionsPrompt,
  type ParamsOf,
} from '../src/index.ts'

describe('web-protocol contracts', () => {
  it('defineMethod refuses a malformed name', () => {
    expect(() => defineMethod('Sessions list', { params: Schema.object({}), result: Schema.object({}) })).toThrow(
      /bad method name "Sessions list"/,
    )
    expect(
      defineMethod('a.b', { params: Schema.object({}), result: Schema.object({}), loopbackOnly: true }),
    ).toMatchObject({ name: 'a.b', loopbackOnly: true })
  })

  it('checkParams fills defaults and names the failing field', () => {
    const params: ParamsOf<typeof sessionsPrompt> = checkParams(sessionsPrompt, { sessionId: 's', text: 'hi' })
    expect(params).toEqual({ sessionId: 's', text: 'hi', mode: 'queue' })
    for (const [raw, field] of [
      [{ sessionId: 's' }, 'text'],
      [{ sessionId: 3, text: 'x' }, 'sessionId'],
      [{ sessionId: 's', text: 'x', mode: 'later' }, 'mode'],
    ] as const) {
      let error: unknown
      try {
        checkParams(sessionsPrompt, raw)
      } catch (e) {
        error = e
      }
      expect(error).toBeInstanceOf(ApiError)
      expect(error).toMatchObject({ code: 'INVALID_PARAMS', status: 400, field })
      expect((error as ApiError).message).toMatch(new RegExp(`^sessions\\.prompt: ${field}: `))
    }
    expect(() => checkParams(sessionsPrompt, 'text')).toThrow(/sessions\.prompt: params expected object/)
  })

  it('ApiError picks a status from its code and renders the error body', () => {
    expect(new ApiError('SESSION_ARCHIVED', 'archived', { field: 'sessionId' }).toBody()).toEqual({
      error: { code: 'SESSION_ARCHIVED', message: 'archived', field: 'sessionId' },
    })
    expect(new ApiError('SESSION_NOT_FOUND', 'x').status).toBe(404)
    expect(new ApiError('CUSTOM', 'x', { status: 418 }).status).toBe(418)
  })

  it('result schemas accept rows without their optional object fields', () => {
    const row = {
      sessionId: 's',
      cwd: '/w',
      createdAt: 1,
      updatedAt: 2,
      turns: 0,
      events: 0,
      archived: false,
      status: 'idle',
      queued: 0,
    }
    expect(SessionRowSchema(row as never)).toEqual(row)
    expect(() => SessionRowSchema({ ...row, model: { provider: 'p' } } as never)).toThrow(/model/)
    expect(commandsExecute.result({ ok: true, name: 'help' } as never)).toEqual({ ok: true, name: 'help' })
  })

  it('every session contract has a unique dotted name', () => {
    const names = sessionContracts.map((c) => c.name)
    expect(new Set(names).size).toBe(names.length)
  })
})

describe('web-protocol stays browser-safe', () => {
  it('its sources import only schemastery and each other', async () => {
    const { readdirSync, readFileSync } = await import('node:fs')
    const dir = new URL('../src/', import.meta.url)
    for (const file of readdirSync(dir)) {
      const text = readFileSync(new URL(file, dir), 'utf8')
      const specifiers = [...text.matchAll(/^(?:import|export)[^'"]*from\s+['"]([^'"]+)['"]/gm)].map((m) => m[1])
      for (const specifier of specifiers) expect(`${file}: ${specifier}`).toMatch(/: (schemastery|\.\/[\w-]+\.ts)$/)
    }
  })
})
