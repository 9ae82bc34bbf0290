import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { toAppError } from '../../plugins/problems.js'
import { IfMatchHeaders, ref } from '../../schemas/common.js'
import { MERGE_PATCH_TYPES } from '../../schemas/merge-patch.js'
import { AppError, errorResponses, type ProblemCode, type ValidationIssue } from '../../schemas/problems.js'
import type { Static, TObject, TSchema } from '../../schemas/typebox.js'
import { mergePatch, type Change } from '../domain/merge-patch.js'
import type { OwnerRule } from '../../plugins/owner.js'
import { security } from './guards.js'

/** What the OpenAPI document says of one operation (its description: schemas/descriptions.ts). */
interface Described { operationId: string, summary: string }

/** A resource's two updates: PUT replaces its writable fields, PATCH merges a JSON Merge Patch into them. */
export interface Updates<Params extends TSchema, Body extends TObject, Resource> {
  url: string
  tags: string[]
  params?: Params
  /** the PUT body (named); every merged PATCH must pass it too */
  body: Body
  /** the PATCH body (named): MergePatchOf(body) */
  patchBody: TSchema
  /** the answer of both (named) */
  response: TSchema
  /** the problems both can answer with */
  errors: ProblemCode[]
  put: Described
  patch: Described
  /** the PUT body that keeps the resource as it is: what a PATCH merges into */
  fieldsOf: (current: Resource) => Static<Body>
  /** who may change it: both routes declare it, and the change hands the resource as it is to request.owned */
  owner?: OwnerRule
  /** the one domain change behind both, with the route's owner and If-Match checks */
  run: (request: FastifyRequest<{ Params: Static<Params> }>, reply: FastifyReply, change: Change<Resource, Static<Body>>) => Promise<Resource>
}

/**
 * Registers `PUT` and `PATCH` on one URL over the same domain function, so both have the same
 * ownership, If-Match, rules and answers. A PATCH merges its body into the resource as it is
 * written (after the change's guard), and the merged fields must pass the PUT body's schema (422).
 */
export function registerUpdates<Params extends TSchema, Body extends TObject, Resource> (fastify: FastifyInstance, u: Updates<Params, Body, Resource>): void {
  type Request = FastifyRequest<{ Params: Static<Params> }>
  const schema = (d: Described, body: TSchema) => ({
    tags: u.tags,
    security,
    operationId: d.operationId,
    summary: d.summary,
    ...(u.params ? { params: u.params } : {}),
    headers: IfMatchHeaders,
    body: ref(body),
    response: { 200: ref(u.response), ...errorResponses(...u.errors) }
  })

  fastify.put(u.url, { config: { etag: true, owner: u.owner }, schema: schema(u.put, u.body) },
    async (request, reply) => u.run(request as Request, reply, request.body as Static<Body>))

  const putRules = { $ref: u.body.$id }
  fastify.patch(u.url, {
    config: { etag: true, owner: u.owner, contentTypes: MERGE_PATCH_TYPES },
    // the handler words a refused null on a required member; every other failure stays as the validator said
    attachValidation: true,
    schema: {
      ...schema(u.patch, u.patchBody),
      consumes: MERGE_PATCH_TYPES,
      response: { 200: ref(u.response), ...errorResponses(...u.errors, 'MalformedBody', 'UnsupportedMediaType') }
    }
  }, async (request, reply) => {
    if (request.validationError) throw refusedPatch(request.validationError, request.body)
    const patch = request.body as Record<string, unknown>
    return u.run(request as Request, reply, (current) => {
      const merged = mergePatch(u.fieldsOf(current), patch)
      const valid = request.compileValidationSchema(putRules, 'body')
      if (!valid(merged)) throw brokenRules(valid.errors ?? [])
      return merged
    })
  })
}

const NOT_CLEARED = 'is required: it may be changed, not cleared with null'

/**
 * The validator's refusal of a PATCH, with a clear message where a required member was sent as
 * null (a PATCH body's required members take no null: schemas/merge-patch.ts).
 */
function refusedPatch (error: Error & { validationContext?: string }, body: unknown): AppError {
  const refused = toAppError(error as FastifyError)
  if (error.validationContext !== 'body' || refused.errors === undefined) return refused
  const sent = (body ?? {}) as Record<string, unknown>
  const cleared = new Set(refused.errors.filter(e => e.rule === 'type' && isNullMember(sent, e.field)).map(e => e.field))
  if (cleared.size === 0) return refused
  const errors: ValidationIssue[] = []
  for (const issue of refused.errors) {
    if (!cleared.has(issue.field)) errors.push(issue)
    else if (issue.rule === 'type') errors.push({ ...issue, message: NOT_CLEARED })
  }
  return new AppError('ValidationFailed', errors.map(e => `${e.field || 'body'}: ${e.message}`).join('; '), { errors })
}

function isNullMember (body: Record<string, unknown>, field: string): boolean {
  const name = /^\/([^/]+)$/.exec(field)?.[1]
  return name !== undefined && Object.hasOwn(body, name) && body[name] === null
}

/** The merged fields broke a rule of the PUT body (a stored value no longer allowed, say): 422, nothing written. */
function brokenRules (validation: unknown[]): AppError {
  const refused = toAppError(Object.assign(new Error('invalid merged fields'), { validation, validationContext: 'body' }) as unknown as FastifyError)
  return new AppError('ValidationFailed', `the merged fields break a rule: ${refused.message}`, { errors: refused.errors })
}
