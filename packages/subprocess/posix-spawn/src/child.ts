// The part of a child both spawners hand out: its exit, then 'close' once its pipes closed.
import { EventEmitter } from 'node:events'
import type { Readable, Writable } from 'node:stream'
import type { SpawnedChild } from './addon.ts'

/** What a posix_spawn child and a spawn server's child share: the exit, then 'close' after the pipes. */
export abstract class ChildBase extends EventEmitter implements SpawnedChild {
  pid: number | undefined
  stdin: Writable | null = null
  stdout: Readable | null = null
  stderr: Readable | null = null
  exitCode: number | null = null
  signalCode: string | null = null
  exited = false
  openPipes = 0

  abstract kill(signal?: NodeJS.Signals | number): boolean

  /** Marks the exit (once); 'close' follows once the pipes closed too (as with ChildProcess). */
  settle(code: number | null, signal: string | null): void {
    if (this.exited) return
    this.exited = true
    this.exitCode = code
    this.signalCode = signal
    this.emit('exit', code, signal)
    this.maybeClose()
  }

  maybeClose(): void {
    if (this.exited && this.openPipes === 0) this.emit('close', this.exitCode, this.signalCode)
  }
}
