import { Type, type Static, type TObject, type TOptional, type TProperties, type TSchema, type TUnsafe } from './typebox.js'
import { Nullable } from './common.js'

/**
 * A JSON Merge Patch (RFC 7396) of a PUT body: every member may be left out (kept); `null`
 * clears an optional field; a required one takes no null, so the validator refuses it (422).
 */
export type MergePatch<B> = { [K in keyof B]?: B[K] | null }

/** The media types a PATCH takes: a merge patch, or the same document sent as plain JSON. */
export const MERGE_PATCH_TYPES = ['application/merge-patch+json', 'application/json']

type PatchProperties<P extends TProperties> = { [K in keyof P]: TOptional<TUnsafe<Static<P[K]> | null>> }

/**
 * The PATCH body of a resource, derived from its PUT body so that each member keeps the PUT's
 * rules (lengths, patterns, formats, enums). The merged resource is checked against the PUT body
 * itself (src/routes/updates.ts), so rules that span members stay in one place too.
 */
export function MergePatchOf<P extends TProperties> (put: TObject<P>, options: {
  $id: string
  title: string
  description: string
  /** a member's description where the PUT's speaks of absence, which a PATCH reads as "keep" */
  members?: Partial<Record<keyof P, string>>
}): TObject<PatchProperties<P>> {
  const { members, ...named } = options
  const described: Partial<Record<string, string>> = members ?? {}
  const required = new Set(put.required ?? [])
  const properties: Record<string, TSchema> = {}
  for (const [name, schema] of Object.entries(put.properties)) {
    const own = described[name] ?? (schema as { description?: string }).description
    if (required.has(name)) {
      const note = 'required: may be changed, not cleared (null is 422)'
      properties[name] = Type.Optional({ ...schema, description: own ? `${own}; ${note}` : note })
    } else {
      const nullable = acceptsNull(schema) ? schema : Nullable(schema)
      properties[name] = Type.Optional(own === undefined ? nullable : { ...nullable, description: own })
    }
  }
  return Type.Object(properties, { ...named, additionalProperties: false }) as unknown as TObject<PatchProperties<P>>
}

function acceptsNull (schema: TSchema): boolean {
  const { type, enum: values, anyOf } = schema as { type?: unknown, enum?: unknown[], anyOf?: TSchema[] }
  if (type === 'null' || (Array.isArray(type) && type.includes('null'))) return true
  if (values?.includes(null)) return true
  return anyOf?.some(acceptsNull) ?? false
}
