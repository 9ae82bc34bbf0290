/**
 * The new writable fields of a change: a PUT's body as sent, or a function that works them out
 * from the resource as it is, called after the change's guard against the row it writes (a PATCH
 * merges into the current fields there, so nothing can change between the read and the write).
 */
export type Change<Current, Body> = Body | ((current: Current) => Body)

/** The body a change writes, given the resource as it is now. */
export function bodyOf<Current, Body extends object> (change: Change<Current, Body>, current: Current): Body {
  return typeof change === 'function' ? (change as (current: Current) => Body)(current) : change
}

type Json = null | boolean | number | string | Json[] | { [key: string]: Json }
type JsonObject = Record<string, unknown>

/**
 * JSON Merge Patch (RFC 7396) of `patch` onto a PUT body that keeps the resource as it is: a
 * member present replaces the field, an absent one is kept, nested objects merge member by
 * member and arrays are replaced whole. A top-level `null` stays in the result as `null` rather
 * than removing the member, because the result is a PUT body: there null clears an optional
 * field, while an absent member can mean "keep" (a post's slug and published_at).
 */
export function mergePatch<Body extends object> (current: Body, patch: JsonObject): Body {
  const merged: JsonObject = { ...current } as JsonObject
  for (const [name, value] of Object.entries(patch)) {
    set(merged, name, value === null ? null : mergeValue(merged[name], value as Json))
  }
  return merged as Body
}

/** RFC 7396's MergePatch(Target, Patch) below the top level: null removes a member. */
function mergeValue (target: unknown, patch: Json): Json {
  if (!isObject(patch)) return patch
  const result: Record<string, Json> = isObject(target) ? { ...(target as Record<string, Json>) } : {}
  for (const [name, value] of Object.entries(patch)) {
    if (value === null) delete result[name]
    else set(result, name, mergeValue(result[name], value))
  }
  return result
}

/** An own data member even for a name such as `__proto__`, which plain assignment would treat as the prototype. */
function set (object: object, name: string, value: unknown): void {
  Object.defineProperty(object, name, { value, enumerable: true, writable: true, configurable: true })
}

function isObject (value: unknown): value is Record<string, Json> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}
