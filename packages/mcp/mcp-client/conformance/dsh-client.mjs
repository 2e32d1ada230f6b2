#!/usr/bin/env node
// A conformance-suite client (`@modelcontextprotocol/conformance client --command "node dsh-client.mjs"`):
// mounts @dsh/mcp-client on the server URL the suite appends, waits for the connection, then calls
// every tool the server lists with arguments made from its schema, through the dsh tool registry,
// and exits. MCP_CONFORMANCE_SCENARIO names the scenario; MCP_CONFORMANCE_CONTEXT carries the
// credentials of the scenarios that need some (pre-registered and client-credentials clients).
//
// The human is played by a `@dsh/user-questions` answerer: a sign-in question is answered by
// fetching the authorization URL the question shows and following its redirect to dsh's loopback
// callback, as a browser would; an elicitation is submitted with every field left empty (the
// server's defaults apply). Run by run.sh, bundled from the sources.
import { Context } from 'cordis'
import { ToolRegistry } from '@dsh/tools'
import SubprocessLocal from '@dsh/subprocess-local'
import UserQuestions from '@dsh/user-questions'
import McpClient from '@dsh/mcp-client'

const url = process.argv.at(-1)
const scenario = process.env.MCP_CONFORMANCE_SCENARIO ?? ''
const context = process.env.MCP_CONFORMANCE_CONTEXT ? JSON.parse(process.env.MCP_CONFORMANCE_CONTEXT) : {}

/** The `oauth` setting a user would write for this server. */
function oauthFor() {
  if (scenario === 'auth/client-credentials-basic')
    return { grant: 'client_credentials', clientId: context.client_id, clientSecret: context.client_secret }
  if (scenario === 'auth/client-credentials-jwt')
    return {
      grant: 'client_credentials',
      clientId: context.client_id,
      privateKey: context.private_key_pem,
      algorithm: context.signing_algorithm ?? 'ES256',
    }
  if (scenario === 'auth/pre-registration') return { clientId: context.client_id, clientSecret: context.client_secret }
  if (scenario === 'auth/cross-app-access-complete-flow')
    return {
      grant: 'cross_app_access',
      clientId: context.client_id,
      clientSecret: context.client_secret,
      idpTokenUrl: context.idp_token_endpoint,
      idToken: context.idp_id_token,
      idpClientId: context.idp_client_id,
    }
  // A client ID metadata document dsh would publish; used only where the server supports them.
  return { clientMetadataUrl: 'https://conformance-test.local/client-metadata.json' }
}

const ctx = new Context()
await ctx.plugin(ToolRegistry, {})
await ctx.plugin(SubprocessLocal, {})
await ctx.plugin(UserQuestions, {})

/** The browser: opens the authorization URL and follows its redirects, as far as dsh's loopback callback. */
async function browse(address) {
  let next = address
  for (let hop = 0; hop < 5 && next; hop++) {
    const response = await fetch(next, { redirect: 'manual' })
    await response.body?.cancel()
    const location = response.headers.get('location')
    process.stderr.write(`dsh-client browser: ${response.status} ${new URL(next).pathname}\n`)
    next = location ? new URL(location, next).href : undefined
  }
}

ctx.userQuestions.registerAnswerer({
  name: 'conformance-human',
  answer(request) {
    const first = request.questions[0]
    if (first.id === 'signin') {
      const address = first.question.split('\n').at(-1)
      browse(address).catch((error) => process.stderr.write(`dsh-client browser failed: ${error.message}\n`))
      return { signin: { selected: ['I will open it myself'] } }
    }
    if (first.id === 'mcp_action') return { mcp_action: { selected: [first.options[0].label] } }
    throw new Error(`unexpected question ${first.id}`)
  },
})

const client = ctx.plugin(McpClient, {
  servers: { conformance: { url, oauth: oauthFor() } },
  projectFile: false,
  userSettings: false,
  callTimeoutMs: 20_000,
  authWaitMs: 20_000,
  retry: { initialDelayMs: 200, maxDelayMs: 1000, maxAttempts: 3, stableMs: 30_000 },
})
await client
await ctx.mcp.ready()
const status = ctx.mcp.get('conformance')
process.stderr.write(`dsh-client: ${JSON.stringify(status)}\n`)
const sample = (schema) => {
  const type = Array.isArray(schema?.type) ? schema.type[0] : schema?.type
  if (schema?.default !== undefined) return schema.default
  if (schema?.enum) return schema.enum[0]
  if (type === 'number' || type === 'integer') return 1
  if (type === 'boolean') return true
  if (type === 'array') return []
  if (type === 'object') return {}
  return 'x'
}
let n = 0
for (const tool of ctx.tools.list()) {
  const props = tool.parameters.properties ?? {}
  const args = Object.fromEntries(Object.entries(props).map(([key, schema]) => [key, sample(schema)]))
  const result = await ctx.tools.execute(
    { callId: `c${++n}`, name: tool.name, arguments: JSON.stringify(args) },
    { cwd: process.cwd() },
  )
  process.stdout.write(`${tool.name}: ${JSON.stringify(result.message.content).slice(0, 300)}\n`)
}
await client.dispose()
process.exit(0)
