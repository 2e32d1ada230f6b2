// The host link left the runtime for @dsh/client-connection; every name of it must still be a
// name of @dsh/client-runtime, bound to the same object (one Connection class, one Store), so a
// half that imports either gets what the runtime's root context uses.
import { describe, expect, it } from 'vitest'
import * as connection from '@dsh/client-connection'
import * as runtime from '../src/index.ts'

describe('@dsh/client-runtime re-exports @dsh/client-connection', () => {
  it('gives every binding of the connection package, the same objects', () => {
    const names = Object.keys(connection).sort()
    expect(names).toEqual(
      expect.arrayContaining(['Connection', 'SessionFeed', 'Remote', 'RemoteError', 'Store', 'readSse', 'Utf8Decoder']),
    )
    for (const name of names)
      expect(runtime[name as keyof typeof runtime], name).toBe(connection[name as keyof typeof connection])
  })

  it('starts the connection package’s services in the root context', async () => {
    const ctx = await runtime.createRuntime({
      remote: { baseUrl: 'http://127.0.0.1:9' },
      connection: { retryMs: 60_000 },
    })
    try {
      expect(ctx.remote).toBeInstanceOf(connection.Remote)
      expect(ctx.connection).toBeInstanceOf(connection.Connection)
    } finally {
      await ctx.fiber.dispose()
    }
  })
})
