// TypeScript -> JavaScript by removing types only (sucrase's `typescript` transform, no module or
// syntax lowering). Sucrase keeps every line where it was, so the program's stack frames and syntax
// errors point at the model's own line numbers. Sucrase (about 80 modules) is imported on the first
// TypeScript run, not at boot: most sessions never run code.
type Transform = typeof import('sucrase').transform
let transformReady: Promise<Transform> | undefined

export class TypeStripError extends Error {
  override name = 'TypeStripError'
}

// The program is the body of an async function: wrapping it lets `return` and `await` parse at the
// top level. The wrapper lines are removed again after the transform (lines are preserved).
const OPEN = 'async function __dsh_program__() {'
const CLOSE = '}'

export async function stripTypes(code: string): Promise<string> {
  const transform = await (transformReady ??= import('sucrase').then((m) => m.transform))
  let output: string
  try {
    output = transform(`${OPEN}\n${code}\n${CLOSE}`, {
      transforms: ['typescript'],
      disableESTransforms: true,
      production: true,
    }).code
  } catch (error) {
    throw new TypeStripError(relocate(error instanceof Error ? error.message : String(error)))
  }
  const lines = output.split('\n')
  const first = lines.findIndex((line) => line.includes('__dsh_program__'))
  let last = lines.length - 1
  while (last > first && lines[last].trim() === '') last--
  if (first < 0 || lines[last].trim() !== CLOSE) throw new TypeStripError('the program could not be type-stripped')
  return lines.slice(first + 1, last).join('\n')
}

/** Sucrase reports `(line:col)` of the wrapped text: shift the line back by the wrapper's one line. */
function relocate(message: string): string {
  return message.replace(
    /\((\d+):(\d+)\)/,
    (_, line: string, col: string) => `(line ${Number(line) - 1}, column ${col})`,
  )
}
