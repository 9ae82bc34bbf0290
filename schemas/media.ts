import { Type, type Static } from '@sinclair/typebox'
import { DateTime, MediaUrl, Params, Uuid } from './common.js'

/** An uploaded file as the API describes it; the bytes are at `url`. */
export const Media = Type.Object({
  id: Uuid,
  url: { ...MediaUrl, description: 'where the file is served: MEDIA_PUBLIC_URL/v1/media/{id}, never with a file extension' },
  content_type: Type.String({ description: 'media type sniffed from the bytes (not the client\'s claim); application/octet-stream when unknown', examples: ['image/png'] }),
  size: Type.Integer({ minimum: 0, description: 'bytes' }),
  sha256: Type.String({ pattern: '^[0-9a-f]{64}$', description: 'SHA-256 of the bytes, lower-case hex' }),
  created_at: DateTime
}, { $id: 'Media', title: 'Media', additionalProperties: false })
export type Media = Static<typeof Media>

export const MediaParams = Params({ mediaId: Uuid })

export const MediaGetHeaders = Type.Object({
  accept: Type.Optional(Type.String({ description: 'the file\'s own type or a wildcard covering it gives the bytes; application/json the metadata; anything else 406' })),
  range: Type.Optional(Type.String({ description: 'one byte range (bytes=0-99, bytes=-100, bytes=100-); several ranges are answered with the whole file' })),
  'if-range': Type.Optional(Type.String({ description: 'the ETag the Range is based on; a stale one gets the whole file' })),
  'if-none-match': Type.Optional(Type.String())
})
