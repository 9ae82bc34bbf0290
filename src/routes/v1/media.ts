import type { Readable } from 'node:stream'
import accepts from '@fastify/accepts'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from '../../../schemas/typebox.js'
import multipart, { receiveFile } from '../../../plugins/multipart.js'
import { AppError } from '../../../schemas/problems.js'
import { IfMatchHeaders, NoContent, NotModified, ref } from '../../../schemas/common.js'
import { FileBytes, Media, MediaGetHeaders, MediaParams } from '../../../schemas/media.js'
import { errorResponses } from '../../../schemas/problems.js'
import { authErrors, security } from '../guards.js'
import {
  bytesEtag,
  createMedia,
  deleteMedia,
  getMedia,
  pickRange,
  releaseUpload,
  reserveUpload,
  storeUpload,
  toMedia,
  type MediaRow
} from '../../domain/media.js'
import { requireVerifiedAddress } from '../../domain/email-verification.js'
import { created } from '../replies.js'

// The bytes go out as a stream, never through a serializer.
const Bytes = Type.Unsafe<Readable>(FileBytes)
const JSON_TYPE = 'application/json'
// How long after its room is taken an upload can still be finishing: the body arrives within
// REQUEST_TIMEOUT_MS (Node cuts it then); this covers the flush to disk and the row after it.
const FINISH_MS = 60_000
// One entry: the bytes are streamed, never serialized, and a serializer per type would only slow
// the start. The documents list every type of MEDIA_BYTE_TYPES in its place (plugins/openapi-document.ts).
const bytesContent = { 'application/octet-stream': { schema: Bytes } }

/**
 * Media: uploads (active users with a verified address, within their storage quota) and
 * downloads. GET is public, like the posts and avatars that point to it; its answer depends on
 * `Accept` (the bytes or the metadata).
 */
const media: FastifyPluginAsyncTypebox = async fastify => {
  const storage = fastify.mediaStorage
  await fastify.register(accepts)

  fastify.get(
    '/media/:mediaId',
    {
      // the JSON metadata's ETag (the bytes carry their own below); Accept picks bytes or metadata here
      config: { etag: true, negotiatesAccept: true },
      schema: {
        tags: ['media'],
        operationId: 'getMedia',
        summary: 'The file (its own type or a wildcard in Accept) or its metadata (application/json)',
        params: MediaParams,
        headers: MediaGetHeaders,
        response: {
          200: {
            description: "The metadata (application/json), or the file's bytes as its own media type",
            content: { [JSON_TYPE]: { schema: ref(Media) }, ...bytesContent }
          },
          206: { description: 'One byte range of the file (see Content-Range), as its own media type', content: bytesContent },
          304: NotModified,
          ...errorResponses('NotAcceptable', 'MediaNotFound', 'RangeNotSatisfiable', 'ValidationFailed')
        }
      }
    },
    async (request, reply) => {
      const row = await getMedia(fastify.db, request.params.mediaId)
      // No Accept, */* or image/* (for an image) pick the bytes, the first offer.
      const wanted = request.accepts().type([row.content_type, JSON_TYPE])
      reply.header('vary', 'accept')
      if (wanted === JSON_TYPE) return toMedia(row, fastify.config.mediaPublicUrl)
      if (wanted === false) throw new AppError('NotAcceptable', `this media is available as ${row.content_type} or ${JSON_TYPE}`)
      const etag = bytesEtag(row)
      reply.header('accept-ranges', 'bytes')
      if (reply.conditional(etag)) return reply.send(null)
      const range = pickRange(Number(row.size), request.headers.range, request.headers['if-range'], etag)
      const stream = await storage.open(row.storage_key, range ?? undefined)
      if (!stream) throw new AppError('MediaNotFound', `the file of media ${row.id} is gone`)
      // Uploaded bytes are never run as a page, whatever their type; other sites may embed them (avatars, post media).
      reply
        .type(row.content_type)
        .header('content-security-policy', "default-src 'none'; sandbox")
        .header('cross-origin-resource-policy', 'cross-origin')
      if (range) reply.code(206).header('content-range', `bytes ${range.start}-${range.end}/${row.size}`)
      return reply.header('content-length', range ? range.end - range.start + 1 : Number(row.size)).send(stream)
    }
  )

  await fastify.register(async uploads => {
    uploads.addHook('onRequest', uploads.authenticate)
    await uploads.register(multipart)

    // Not `idempotent`: Idempotency-Key compares request bodies, and a streamed upload is
    // never held in memory to be compared; a retried upload makes a second media.
    uploads.post(
      '/media',
      {
        config: { contentTypes: ['multipart/form-data'] },
        // Before any byte of the body is read: an unverified address is refused and nothing is stored.
        preHandler: async request => {
          await requireVerifiedAddress(fastify.db, request.user.id)
        },
        schema: {
          tags: ['media'],
          operationId: 'uploadMedia',
          summary: 'Upload a file (multipart/form-data, one file field `file`)',
          security,
          consumes: ['multipart/form-data'],
          // Documents the form; a streamed body is never parsed into `request.body`, so this checks nothing.
          body: {
            content: {
              'multipart/form-data': {
                schema: Type.Unsafe({
                  properties: { file: Bytes },
                  required: ['file'],
                  examples: [{ file: 'Notes on the Analytical Engine, chapter 1\n' }]
                })
              }
            }
          },
          response: {
            201: ref(Media),
            ...errorResponses(
              'MalformedBody',
              'NotAuthenticated',
              'InvalidCredentials',
              'UserIsBanned',
              'EmailNotVerified',
              'PayloadTooLarge',
              'StorageQuotaExceeded',
              'UnsupportedMediaType',
              'ValidationFailed'
            )
          }
        }
      },
      async (request, reply) => {
        const { config, db } = fastify
        // The room an upload takes is what its body can hold: the file is never longer than the body.
        const length = Number(request.headers['content-length'])
        const wanted = Number.isSafeInteger(length) && length >= 0 ? Math.min(length, config.MAX_UPLOAD_BYTES) : config.MAX_UPLOAD_BYTES
        const reservation = await reserveUpload(db, request.user.id, {
          quota: config.MEDIA_QUOTA_BYTES,
          maxFiles: config.MEDIA_QUOTA_FILES,
          wanted,
          ttlMs: config.REQUEST_TIMEOUT_MS + FINISH_MS
        })
        try {
          const upload = await receiveFile(
            request,
            'file',
            part => storeUpload(storage, part.file, reservation),
            stored => storage.remove(stored.storage_key)
          )
          const row = await createMedia(db, storage, reservation, upload)
          return created(reply, `/v1/media/${row.id}`, toMedia(row, config.mediaPublicUrl))
        } catch (err) {
          // The room goes back now; should this fail too, it lapses at its expiry.
          await releaseUpload(db, reservation).catch((cause: unknown) =>
            request.log.warn({ err: cause }, "could not release an upload's reserved room")
          )
          throw err
        }
      }
    )

    uploads.delete(
      '/media/:mediaId',
      {
        // If-Match names the ETag of the metadata (GET with Accept: application/json)
        config: { owner: { of: (row: MediaRow) => row.owner_id, item: (row: MediaRow) => toMedia(row, fastify.config.mediaPublicUrl) } },
        schema: {
          tags: ['media'],
          operationId: 'deleteMedia',
          summary: 'Delete an uploaded file, free its quota, clear your references to it (uploader)',
          security,
          params: MediaParams,
          headers: IfMatchHeaders,
          response: {
            204: NoContent,
            ...errorResponses(...authErrors, 'UserNotOwner', 'MediaNotFound', 'ValidationFailed', 'PreconditionFailed')
          }
        }
      },
      async (request, reply) => {
        const { mediaId } = request.params as { mediaId: string }
        await deleteMedia(fastify.db, storage, request.user.id, mediaId, request.owned)
        return reply.code(204).send(null)
      }
    )
  })
}

export default media
