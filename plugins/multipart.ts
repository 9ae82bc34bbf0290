import multipart, { type Multipart, type MultipartFile } from '@fastify/multipart'
import fp from 'fastify-plugin'
import type { FastifyRequest } from 'fastify'
import { AppError } from '../schemas/problems.js'
import { logClientAbort } from './problems.js'

// Parser limits (busboy's) the multipart errors turn into 413; the form takes one file and nothing else.
const TOO_LARGE = new Set(['FST_REQ_FILE_TOO_LARGE', 'FST_PARTS_LIMIT', 'FST_FIELDS_LIMIT'])

/**
 * @fastify/multipart with explicit limits, for the routes of the group that registers it
 * (register it inside a route group: other routes get no multipart parser at all).
 * Nothing is buffered: the file arrives as a stream that the route hands to storage.
 */
export default fp(async (fastify) => {
  await fastify.register(multipart, {
    limits: {
      fileSize: fastify.config.MAX_UPLOAD_BYTES,
      files: 1,
      fields: 2,
      fieldNameSize: 100,
      fieldSize: 1024,
      parts: 3,
      headerPairs: 20
    }
  })
  // A client that leaves mid-upload: one info line, no stack; storage removes the partial file.
  fastify.addHook('onRequestAbort', (request, done) => { logClientAbort(request); done() })
  // A request refused before its body was read (too large, wrong shape) closes the connection,
  // so the client stops sending instead of the server reading the rest for nothing.
  fastify.addHook('onSend', async (request, reply, payload) => {
    if (request.isMultipart() && reply.statusCode >= 400 && !request.raw.readableEnded) reply.header('connection', 'close')
    return payload
  })
}, { name: 'multipart', dependencies: ['config', 'problems'] })

/**
 * Reads a multipart form whose one and only part is the file field `field` and hands the
 * file stream to `store`. Anything else in the form is 422; a file over the size limit is
 * 413; a catalogue error `store` throws (a quota it stops the stream for) is the answer as it is.
 * When the form fails after the file was stored (a second part, a truncated file, a client that
 * went away), `discard` removes what `store` made, so nothing stays behind.
 */
export async function receiveFile<T> (request: FastifyRequest, field: string,
  store: (file: MultipartFile) => Promise<T>, discard: (stored: T) => Promise<void>): Promise<T> {
  if (!request.isMultipart()) throw notMultipart()
  let stored: { value: T } | undefined
  try {
    for await (const part of request.parts()) {
      if (stored !== undefined || part.type !== 'file' || part.fieldname !== field) throw unexpected(part, field)
      try {
        stored = { value: await store(part) }
      } catch (err) {
        // A catalogue error from `store` (the quota) is the answer; stopping it left the file stream
        // errored (an AbortError) as a side effect. Otherwise an errored stream means the client
        // (limit, abort, bad framing), not the server.
        throw !(err instanceof AppError) && part.file.errored ? clientError(part.file.errored, field) : err
      }
      if (part.file.truncated) throw new AppError('PayloadTooLarge', `the file is over the upload limit of ${request.server.config.MAX_UPLOAD_BYTES} bytes`)
    }
  } catch (err) {
    if (stored !== undefined) await discard(stored.value)
    if (clientLeft(request, err)) {
      logClientAbort(request)
      // A 4xx, never the 503 of a lost database connection (ECONNRESET): the client is the one gone.
      throw new AppError('MalformedBody', 'the client closed the connection before the upload ended')
    }
    throw clientError(err, field)
  }
  if (stored === undefined) {
    throw new AppError('ValidationFailed', `the form needs a file field \`${field}\``, {
      errors: [{ in: 'body', field: `/${field}`, rule: 'required', message: 'is required' }]
    })
  }
  return stored.value
}

/** Did the upload fail because the client closed the connection (not because of what it sent)? */
function clientLeft (request: FastifyRequest, err: unknown): boolean {
  return request.raw.aborted || (err as { code?: string }).code === 'ECONNRESET' || (request.raw.destroyed && !request.raw.complete)
}

function notMultipart (): AppError {
  return new AppError('UnsupportedMediaType', 'Content-Type must be multipart/form-data with a boundary')
}

function unexpected (part: Multipart, field: string): AppError {
  if (part.type === 'file') part.file.resume() // let the parser move on; the answer is decided
  const name = part.fieldname
  return new AppError('ValidationFailed', `the form takes one file field \`${field}\` and nothing else`, {
    errors: [name === field
      ? { in: 'body', field: `/${field}`, rule: part.type === 'file' ? 'maxItems' : 'type', message: part.type === 'file' ? 'takes one file' : 'must be a file' }
      : { in: 'body', field: `/${name}`, rule: 'additionalProperties', message: 'is not a known property' }]
  })
}

/** Parser errors as catalogue errors: limits 413, a second file 422, broken or cut-off framing 400. */
function clientError (err: unknown, field: string): unknown {
  if (err instanceof AppError) return err
  const code = (err as { code?: string }).code ?? ''
  if (TOO_LARGE.has(code)) return new AppError('PayloadTooLarge', 'the upload is over its size limit')
  if (code === 'FST_FILES_LIMIT') {
    return new AppError('ValidationFailed', 'the form takes one file', {
      errors: [{ in: 'body', field: `/${field}`, rule: 'maxItems', message: 'takes one file' }]
    })
  }
  if (code.startsWith('FST_') || (code === '' && /multipart|terminated early|boundary/i.test((err as Error).message ?? ''))) {
    return new AppError('MalformedBody', 'the multipart body is malformed or was cut off')
  }
  return err
}
