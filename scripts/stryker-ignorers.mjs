// Stryker ignorer plugins for `pnpm mutation` (scripts/mutation.mjs): code whose mutants say nothing
// about behaviour, so that the score measures the tests and not the prose.
// - `DshDocText`: the text argument of a `.description('...')` call (Schemastery config docs).
// - `DshLogCall`: a statement that only logs (`ctx.logger('x').warn(...)`, `logger.debug(...)`).
// Anything else a package wants left alone is marked in its source with a `// Stryker disable`
// comment that gives the reason.
import { createRequire } from 'node:module'

const fromCore = createRequire(import.meta.resolve('@stryker-mutator/core'))
const { PluginKind, declareClassPlugin } = await import(fromCore.resolve('@stryker-mutator/api/plugin'))

const LOG_METHODS = new Set(['debug', 'info', 'warn', 'error', 'success'])

function propertyName(member) {
  if (member.type !== 'MemberExpression' && member.type !== 'OptionalMemberExpression') return undefined
  return member.property.type === 'Identifier' && !member.computed ? member.property.name : undefined
}

class DocTextIgnorer {
  shouldIgnore(path) {
    if (!path.isStringLiteral() && !path.isTemplateLiteral()) return undefined
    const call = path.parentPath
    if (path.listKey !== 'arguments' || !call?.isCallExpression()) return undefined
    return propertyName(call.node.callee) === 'description' ? 'documentation text of a config schema' : undefined
  }
}

function isLoggerObject(node) {
  // ctx.logger('name'), this.ctx.logger('name'), logger, log, this.logger
  if (node.type === 'CallExpression')
    return (
      propertyName(node.callee) === 'logger' || (node.callee.type === 'Identifier' && node.callee.name === 'logger')
    )
  if (node.type === 'Identifier') return node.name === 'logger' || node.name === 'log'
  return propertyName(node) === 'logger' || propertyName(node) === 'log'
}

class LogCallIgnorer {
  shouldIgnore(path) {
    if (!path.isExpressionStatement()) return undefined
    let expr = path.node.expression
    if (expr.type === 'ChainExpression') expr = expr.expression
    if (expr.type !== 'CallExpression' && expr.type !== 'OptionalCallExpression') return undefined
    const callee = expr.callee
    if (!LOG_METHODS.has(propertyName(callee) ?? '')) return undefined
    return isLoggerObject(callee.object) ? 'a log line, not behaviour' : undefined
  }
}

export const strykerPlugins = [
  declareClassPlugin(PluginKind.Ignore, 'DshDocText', DocTextIgnorer),
  declareClassPlugin(PluginKind.Ignore, 'DshLogCall', LogCallIgnorer),
]
