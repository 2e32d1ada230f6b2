// dsh-plugin-hello: one tool, `hello`, that greets someone. dsh mounts it as a row of a profile;
// the tool is unregistered again when the row unloads (the registry ties it to this plugin).
import Schema from 'schemastery'

export const name = 'dsh-plugin-hello'
export const inject = ['tools']
export const Config = Schema.object({
  greeting: Schema.string().default('Hello').description('The word the tool greets with.'),
  punctuation: Schema.union(['!', '.']).default('!').description('How the greeting ends.'),
})

/**
 * @param {import('cordis').Context} ctx
 * @param {{ greeting: string, punctuation: '!' | '.' }} config
 */
export function apply(ctx, config) {
  ctx.tools.register({
    name: 'hello',
    description: 'Greets a person by name. Use it when the user asks you to say hello to someone.',
    parameters: {
      type: 'object',
      properties: { name: { type: 'string', description: 'Who to greet.' } },
      required: ['name'],
      additionalProperties: false,
    },
    concurrencySafe: true,
    execute: (args) => ({ content: `${config.greeting}, ${args.name}${config.punctuation}` }),
  })
}
