// Browser-safe contracts of the settings and credentials methods (no node imports); a client
// imports them from `@dsh/api-settings/contract`.
import Schema from 'schemastery'
import { defineMethod } from '@dsh/web-protocol'

export interface WireSection {
  /** The settings namespace (a plugin name). */
  namespace: string
  title?: string
  description?: string
  /** The section's schemastery schema as JSON (`Schema(json)` rebuilds it in the browser). */
  schema: unknown
  /** The validated section (the defaults when absent or invalid); secret fields are omitted. */
  value: unknown
  /** Dotted paths of fields with role `secret`: never sent, only whether they are set. */
  secrets: { path: string; set: boolean }[]
  /** Why the stored section is not used (the defaults are), when it is invalid. */
  error?: { field: string; message: string }
}

export interface WireLayer {
  id: string
  label: string
  path?: string
  writable: boolean
  status: 'ok' | 'absent' | 'refused' | 'malformed'
  problem?: string
}

/** Where a credential's value comes from. Never the value. */
export interface WireCredential {
  name: string
  description?: string
  configured: boolean
  /** The layer id whose value is used. */
  source?: string
  /** Lower-precedence layer ids that also hold a value. */
  shadowed: string[]
  layers: WireLayer[]
}

const Layer: Schema<WireLayer> = Schema.object({
  id: Schema.string().required(),
  label: Schema.string().required(),
  path: Schema.string(),
  writable: Schema.boolean().required(),
  status: Schema.union(['ok', 'absent', 'refused', 'malformed'] as const).required(),
  problem: Schema.string(),
}) as Schema<WireLayer>

const Credential: Schema<WireCredential> = Schema.object({
  name: Schema.string().required(),
  description: Schema.string(),
  configured: Schema.boolean().required(),
  source: Schema.string(),
  shadowed: Schema.array(Schema.string()).required(),
  layers: Schema.array(Layer).required(),
}) as Schema<WireCredential>

const Section: Schema<WireSection> = Schema.object({
  namespace: Schema.string().required(),
  title: Schema.string(),
  description: Schema.string(),
  schema: Schema.any(),
  value: Schema.any(),
  secrets: Schema.array(
    Schema.object({ path: Schema.string().required(), set: Schema.boolean().required() }),
  ).required(),
  error: Schema.object({ field: Schema.string().required(), message: Schema.string().required() }),
}) as Schema<WireSection>

const NAMESPACE = Schema.string()
  .pattern(/^[A-Za-z][A-Za-z0-9_-]*$/)
  .required()
const CREDENTIAL_NAME = Schema.string()
  .pattern(/^[A-Za-z_][A-Za-z0-9_]*$/)
  .required()

export const settingsDescribe = defineMethod('settings.describe', {
  params: Schema.object({}) as Schema<Record<string, never>>,
  result: Schema.object({
    location: Schema.string().required(),
    sections: Schema.array(Section).required(),
  }) as Schema<{ location: string; sections: WireSection[] }>,
  description: 'The exposed settings sections: schema (JSON), current value, secret fields (set or not), error.',
})

export const settingsUpdate = defineMethod('settings.update', {
  params: Schema.object({ namespace: NAMESPACE, patch: Schema.dict(Schema.any()).required() }) as Schema<{
    namespace: string
    patch: Record<string, unknown>
  }>,
  result: Section as Schema<WireSection>,
  description:
    'Deep-merges a patch into an exposed section after validating the result against its schema; null deletes nothing, it replaces.',
})

export const credentialsDescribe = defineMethod('credentials.describe', {
  params: Schema.object({ names: Schema.array(CREDENTIAL_NAME) }) as Schema<{ names?: string[] }>,
  result: Schema.object({ credentials: Schema.array(Credential).required() }) as Schema<{
    credentials: WireCredential[]
  }>,
  description: 'Which credentials are set and where (the known ones, or the names given). Never a value.',
})

export const credentialsSet = defineMethod('credentials.set', {
  params: Schema.object({ name: CREDENTIAL_NAME, value: Schema.string().required() }) as Schema<{
    name: string
    value: string
  }>,
  result: Schema.object({ credential: Credential.required() }) as Schema<{ credential: WireCredential }>,
  loopbackOnly: true,
  description: 'Stores a known credential in the writable layer; answers where it is now set, never the value.',
})

export const credentialsUnset = defineMethod('credentials.unset', {
  params: Schema.object({ name: CREDENTIAL_NAME }) as Schema<{ name: string }>,
  result: Schema.object({ credential: Credential.required() }) as Schema<{ credential: WireCredential }>,
  loopbackOnly: true,
  description: 'Removes a known credential from the writable layer (other layers are untouched).',
})
