import { Type, type Static } from './typebox.js'
import { DateTime, ListQuery, MediaUrl, Params, Uuid, ref } from './common.js'

/** An uploaded file as the API describes it; the bytes are at `url`. */
export const Media = Type.Object({
  id: Uuid,
  url: { ...MediaUrl, description: 'where the file is served: MEDIA_PUBLIC_URL/v1/media/{id}, never with a file extension' },
  content_type: Type.String({
    description: 'media type sniffed from the bytes (not the client\'s claim); ' +
    'text/plain for HTML, XML (SVG, XHTML) and other active content; application/octet-stream when unknown',
    examples: ['image/png']
  }),
  size: Type.Integer({ minimum: 0, description: 'bytes' }),
  sha256: Type.String({ pattern: '^[0-9a-f]{64}$', description: 'SHA-256 of the bytes, lower-case hex' }),
  created_at: DateTime
}, { $id: 'Media', title: 'Media', additionalProperties: false })
export type Media = Static<typeof Media>

export const MediaParams = Params({ mediaId: Uuid })

export const MY_MEDIA_SORTABLE = ['created_at', 'size'] as const
export const MyMediaListQuery = ListQuery(MY_MEDIA_SORTABLE, {}, '-created_at')
export type MyMediaListQuery = Static<typeof MyMediaListQuery>

const Bytes = (description: string, example: number) => Type.Integer({ minimum: 0, description, examples: [example] })

/** A page of the caller's own uploads, with what they all take against the storage quota. */
export const MyMediaList = Type.Object({
  media: Type.Array(ref(Media)),
  total: Type.Integer({ minimum: 0, description: 'number of files the caller has stored' }),
  used_bytes: Bytes('bytes of every file the caller has stored (all pages)', 48213),
  quota_bytes: Bytes('the most the caller\'s stored files may take (MEDIA_QUOTA_BYTES)', 5368709120),
  available_bytes: Bytes('what the next upload may take now: the quota less the stored files and the uploads in progress (never below ' +
    '0); the per-upload limit applies as well', 5368660907)
}, { title: 'MyMediaList', additionalProperties: false })
export type MyMediaList = Static<typeof MyMediaList>

/**
 * Every media type the bytes of a file can be served as: what the upload sniffer (file-type)
 * recognises, else text/plain or application/octet-stream. Never application/json, which names
 * the metadata, nor a type a browser would run (XML, Flash: those are text/plain).
 * A test keeps the list equal to file-type's.
 */
export const MEDIA_BYTE_TYPES = [
  'application/avro', 'application/dicom', 'application/eps', 'application/epub+zip', 'application/gzip',
  'application/java-archive', 'application/java-vm', 'application/mxf', 'application/octet-stream',
  'application/ogg', 'application/pdf', 'application/pgp-encrypted', 'application/postscript', 'application/rtf',
  'application/vnd.android.package-archive', 'application/vnd.apache.arrow.file', 'application/vnd.apache.parquet',
  'application/vnd.google.draco', 'application/vnd.iccprofile', 'application/vnd.ms-asf',
  'application/vnd.ms-cab-compressed', 'application/vnd.ms-excel.sheet.macroenabled.12',
  'application/vnd.ms-excel.template.macroenabled.12', 'application/vnd.ms-fontobject',
  'application/vnd.ms-htmlhelp', 'application/vnd.ms-outlook',
  'application/vnd.ms-powerpoint.presentation.macroenabled.12',
  'application/vnd.ms-powerpoint.slideshow.macroenabled.12',
  'application/vnd.ms-powerpoint.template.macroenabled.12', 'application/vnd.ms-word.document.macroenabled.12',
  'application/vnd.ms-word.template.macroenabled.12', 'application/vnd.oasis.opendocument.graphics',
  'application/vnd.oasis.opendocument.graphics-template', 'application/vnd.oasis.opendocument.presentation',
  'application/vnd.oasis.opendocument.presentation-template', 'application/vnd.oasis.opendocument.spreadsheet',
  'application/vnd.oasis.opendocument.spreadsheet-template', 'application/vnd.oasis.opendocument.text',
  'application/vnd.oasis.opendocument.text-template',
  'application/vnd.openxmlformats-officedocument.presentationml.presentation',
  'application/vnd.openxmlformats-officedocument.presentationml.slideshow',
  'application/vnd.openxmlformats-officedocument.presentationml.template',
  'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet',
  'application/vnd.openxmlformats-officedocument.spreadsheetml.template',
  'application/vnd.openxmlformats-officedocument.wordprocessingml.document',
  'application/vnd.openxmlformats-officedocument.wordprocessingml.template', 'application/vnd.rn-realmedia',
  'application/vnd.sketchup.skp', 'application/vnd.tcpdump.pcap', 'application/vnd.visio', 'application/wasm',
  'application/x-7z-compressed', 'application/x-ace-compressed', 'application/x-apple-diskimage',
  'application/x-arj', 'application/x-asar', 'application/x-blender', 'application/x-bzip2', 'application/x-cfb',
  'application/x-compress', 'application/x-cpio', 'application/x-deb', 'application/x-elf',
  'application/x-esri-shape', 'application/x-ft-windows-registry-hive', 'application/x-google-chrome-extension',
  'application/x-indesign', 'application/x-jmp-data', 'application/x-lz4', 'application/x-lzh-compressed',
  'application/x-lzip', 'application/x-mach-binary', 'application/x-mie', 'application/x-mobipocket-ebook',
  'application/x-ms-regedit', 'application/x-msdownload', 'application/x-nintendo-nes-rom',
  'application/x-rar-compressed', 'application/x-rpm', 'application/x-spss-sav',
  'application/x-sqlite3', 'application/x-tar', 'application/x-unix-archive', 'application/x-xpinstall',
  'application/x-xz', 'application/x.apple.alias', 'application/x.autodesk.fbx', 'application/x.ms.shortcut',
  'application/zip', 'application/zstd', 'audio/aac', 'audio/aiff', 'audio/amr', 'audio/ape',
  'audio/flac', 'audio/midi', 'audio/mp4', 'audio/mpeg', 'audio/ogg', 'audio/ogg; codecs=opus', 'audio/qcelp',
  'audio/vnd.dolby.dd-raw', 'audio/wav', 'audio/wavpack', 'audio/x-dsf', 'audio/x-it', 'audio/x-m4a',
  'audio/x-ms-asf', 'audio/x-musepack', 'audio/x-s3m', 'audio/x-voc', 'audio/x-xm', 'font/collection', 'font/otf',
  'font/ttf', 'font/woff', 'font/woff2', 'image/apng', 'image/avif', 'image/bmp', 'image/bpg', 'image/flif',
  'image/gif', 'image/heic', 'image/heic-sequence', 'image/heif', 'image/heif-sequence', 'image/icns', 'image/j2c',
  'image/jls', 'image/jp2', 'image/jpeg', 'image/jpm', 'image/jpx', 'image/jxl', 'image/ktx', 'image/mj2',
  'image/png', 'image/tiff', 'image/vnd.adobe.photoshop', 'image/vnd.dwg', 'image/vnd.ms-photo', 'image/webp',
  'image/x-adobe-dng', 'image/x-canon-cr2', 'image/x-canon-cr3', 'image/x-fujifilm-raf', 'image/x-icon',
  'image/x-nikon-nef', 'image/x-olympus-orf', 'image/x-panasonic-rw2', 'image/x-sony-arw', 'image/x-xcf',
  'model/3mf', 'model/gltf-binary', 'model/stl', 'text/calendar', 'text/plain', 'text/vcard', 'text/vtt',
  'video/3gpp', 'video/3gpp2', 'video/MP1S', 'video/MP2P', 'video/matroska', 'video/mp2t', 'video/mp4', 'video/mpeg',
  'video/ogg', 'video/quicktime', 'video/vnd.avi', 'video/webm', 'video/x-flv', 'video/x-m4v', 'video/x-ms-asf'
] as const

/** The bytes as the document describes them (they go out as a stream, never through a serializer). */
export const FileBytes = Type.String({ format: 'binary', description: 'the file, as its own media type' })

// `Accept` is not a parameter (OpenAPI leaves it to the responses' media types): it picks the bytes or the metadata.
export const MediaGetHeaders = Type.Object({
  range: Type.Optional(Type.String({ description: 'one byte range (bytes=0-99, bytes=-100, bytes=100-); several ranges are answered with the whole file' })),
  'if-range': Type.Optional(Type.String({ description: 'the ETag the Range is based on; a stale one gets the whole file' })),
  'if-none-match': Type.Optional(Type.String({ description: 'an ETag from an earlier answer: while it is current, the answer is 304 with no body' }))
})
