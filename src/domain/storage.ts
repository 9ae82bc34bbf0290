import type { Readable } from 'node:stream'

/** The storage the media rules need, as a port: the media-storage plugin provides a driver for it. */

export interface StoredObject {
  size: number
  /** lower-case hex */
  sha256: string
}

/** An inclusive byte range, as range-parser gives it. */
export interface ByteRange {
  start: number
  end: number
}

/** Where media bytes live. Keys are made by the server, never by a client. */
export interface MediaStorage {
  /** Stores the stream under `key`; all or nothing: a failure or abort leaves no trace. */
  put: (key: string, source: Readable | AsyncIterable<Buffer>, opts?: { signal?: AbortSignal }) => Promise<StoredObject>
  /** A read stream of the object (or of one range of it); null when there is no such object. */
  open: (key: string, range?: ByteRange) => Promise<Readable | null>
  /** Removes the object; no error when it is already gone. */
  remove: (key: string) => Promise<void>
}
