// Where a headless run writes, and the status it exits with when its reader went away.

export interface Io {
  stdout: NodeJS.WritableStream
  stderr: NodeJS.WritableStream
  /**
   * Aborted (with the stream's error) once stdout cannot take more output: its reader went away
   * (`dsh -p ... | head -1`). The run then stops its turn, writes nothing more and exits
   * `ExitCode.outputClosed` (141, of `@dsh/surface-kit`).
   */
  outputGone?: AbortSignal
}
