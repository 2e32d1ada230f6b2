/**
 * A user-facing mistake or failure reported as one line without a stack trace.
 * `exitCode` follows the conventions: 2 for usage errors, 1 for everything else.
 */
export class DshUserError extends Error {
  override name = 'DshUserError'
  constructor(
    message: string,
    readonly exitCode: 1 | 2 = 1,
  ) {
    super(message)
  }
}
