// A minimal SSE reader for the tests: splits a fetch body into events (data lines) and comments.
export interface SseItem {
  data?: string
  comment?: string
}

export async function* readSse(body: ReadableStream<Uint8Array>): AsyncGenerator<SseItem> {
  const decoder = new TextDecoder()
  let buffer = ''
  const reader = body.getReader()
  try {
    for (;;) {
      const { value, done } = await reader.read()
      if (done) break
      buffer += decoder.decode(value, { stream: true })
      let end: number
      while ((end = buffer.indexOf('\n\n')) >= 0) {
        const block = buffer.slice(0, end)
        buffer = buffer.slice(end + 2)
        const data: string[] = []
        for (const line of block.split('\n')) {
          if (line.startsWith(':')) yield { comment: line.slice(1).trim() }
          else if (line.startsWith('data:')) data.push(line.slice(5).replace(/^ /, ''))
        }
        if (data.length) yield { data: data.join('\n') }
      }
    }
  } finally {
    reader.releaseLock()
  }
}

/** Reads the whole stream: JSON frames (parsed), comments, and whether `[DONE]` arrived. */
export async function collectSse(response: Response) {
  const frames: any[] = [] // eslint-disable-line @typescript-eslint/no-explicit-any -- wire JSON, asserted by the tests
  const comments: string[] = []
  let done = false
  for await (const item of readSse(response.body!)) {
    if (item.comment !== undefined) comments.push(item.comment)
    else if (item.data === '[DONE]') done = true
    else frames.push(JSON.parse(item.data!))
  }
  return { frames, comments, done }
}
