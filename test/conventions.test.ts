import type { FastifyInstance } from 'fastify'
import { Type } from '../schemas/typebox.js'
import { sql } from '../src/db/kysely.js'
import t, { type Test } from 'tap'
import { ListOf, PageQuery, DateTime, DateTimeInput, DateOnly, Params, Uuid, ref } from '../schemas/common.js'
import { Problem, errorResponses } from '../schemas/problems.js'
import {
  DECLARED,
  checkAll,
  checkCollections,
  checkLists,
  checkPathParams,
  checkPaths,
  checkProperties,
  checkQueryNames,
  checkRouteSchemas,
  checkTables,
  formatFindings,
  type Finding,
  type RouteInfo,
  type SchemaMap
} from '../scripts/conventions/check.js'
import { collectRoutes, collectSchemas, collectTables } from '../scripts/conventions/collect.js'
import { checkApp } from '../scripts/conventions/run.js'
import { createDb } from '../src/db/dialect.js'
import { freshDatabase, testConfig, testFastify, whileMigrating } from './helper.js'

// checkApp migrates the database: under the lock that keeps other files from dropping their schemas meanwhile
t.test('the real app has no findings', async t => {
  const database = await freshDatabase(t)
  const findings = await whileMigrating(() => checkApp(testConfig({}, database.url), database.schema))
  t.same(findings, [], formatFindings(findings))
})

t.test('the real app as local runs it (docs routes included) has no findings', async t => {
  const database = await freshDatabase(t)
  const findings = await whileMigrating(() => checkApp(testConfig({ ENVIRONMENT: 'local' }, database.url), database.schema))
  t.same(findings, [], formatFindings(findings))
})

const Thing = Type.Object({ id: Uuid, created_at: DateTime }, { $id: 'Thing', title: 'Thing', additionalProperties: false })
const ThingList = ListOf('things', ref(Thing), 'ThingList')
const ThingParams = Params({ thingId: Uuid })

/** A well-formed single-resource route; tests override parts of it to break one rule. */
function schema (overrides: Record<string, unknown> = {}, param = 'thingId') {
  return {
    tags: ['things'],
    operationId: `op${Math.random().toString(36).slice(2, 10)}`,
    summary: 'a thing',
    description: 'Anyone: a thing.',
    params: param === 'thingId' ? ThingParams : Params({ [param]: Uuid }),
    querystring: Type.Object({}, { additionalProperties: false }),
    response: { 200: ref(Thing), ...errorResponses('ValidationFailed', 'ResourceNotFound') },
    ...overrides
  }
}

/** A bare Fastify with the shared schemas, the routes `add` registers, and their table. */
async function table (t: Test, add: (f: FastifyInstance) => void): Promise<{ routes: RouteInfo[]; schemas: SchemaMap }> {
  const fastify = testFastify(testConfig()) // the real validators (custom formats)
  t.teardown(() => fastify.close())
  const routes = collectRoutes(fastify)
  for (const s of [Problem, Thing, ThingList]) fastify.addSchema(s)
  add(fastify)
  await whileMigrating(() => fastify.ready())
  return { routes, schemas: collectSchemas(fastify) }
}

const handler = async () => ({})
const rules = (findings: Finding[]) => findings.map(f => `${f.rule} ${f.where}`).sort()

t.test('path rules', async t => {
  const { routes } = await table(t, f => {
    f.get('/v1/things/:thingId', { schema: schema() }, handler) // good
    f.get('/v1/users/me/things', { schema: schema() }, handler) // good: `me` is an alias of the caller's id
    f.post('/v1/things/:thingId/resend', { schema: schema() }, handler) // good: a declared action
    f.post('/v1/auth/token', { schema: schema() }, handler) // good: a declared path
    f.get('/v1/courses/:courseId/chapters/:chapterId/lessons', { schema: schema() }, handler) // good: the named exception
    f.get('/health', { schema: schema() }, handler) // operational: exempt
    f.get('/v1/thing/:thingId', { schema: schema() }, handler) // singular
    f.get('/v1/big_things', { schema: schema() }, handler) // not kebab-case
    f.get('/v1/things/:thingId/:otherId', { schema: schema() }, handler) // identifier after identifier
    f.get('/v1/things/all', { schema: schema() }, handler) // literal where an identifier belongs
    f.get('/v1/things/:thingId/parts/:partId/bolts', { schema: schema() }, handler) // three levels
    f.post('/v1/things/:thingId/publish', { schema: schema() }, handler) // undeclared verb
    f.get('/things', { schema: schema() }, handler) // unversioned resource
  })
  t.same(rules(checkPaths(routes)), [
    'path-collection-then-id GET /v1/things/all',
    'path-collection-then-id GET /v1/things/{thingId}/{otherId}',
    'path-kebab-case GET /v1/big_things',
    'path-nesting GET /v1/things/{thingId}/parts/{partId}/bolts',
    'path-plural GET /v1/thing/{thingId}',
    'path-verb POST /v1/things/{thingId}/publish',
    'path-versioned GET /things'
  ])
})

t.test('a path parameter has one name everywhere', async t => {
  const { routes } = await table(t, f => {
    f.get('/v1/profiles/:profileId', { schema: schema() }, handler) // good
    f.get('/v1/creators/:profileId', { schema: schema() }, handler) // good: the declared alias
    f.get('/v1/profiles/:id/posts', { schema: schema() }, handler) // another name for {profileId}
    f.get('/v1/creators/:creatorId/posts', { schema: schema() }, handler) // a parameter named after another resource
    f.get('/v1/shops/:shop_id', { schema: schema() }, handler) // not camelCase
  })
  t.same(rules(checkPathParams(routes)), [
    'param-name /creators/{…}',
    'param-name /profiles/{…}',
    'param-name GET /v1/creators/{creatorId}/posts',
    'param-name GET /v1/profiles/{id}/posts',
    'param-name GET /v1/profiles/{id}/posts',
    'param-name GET /v1/shops/{shop_id}',
    'param-name GET /v1/shops/{shop_id}'
  ])
})

t.test('a collection that takes POST has GET, PUT, PATCH and DELETE on its items, or a declared exception', async t => {
  const item = (f: FastifyInstance, url: string, methods: string[]) => {
    for (const method of methods) f.route({ method, url, schema: schema(), handler })
  }
  const { routes } = await table(t, f => {
    // complete: the items under the collection
    f.post('/v1/things', { schema: schema() }, handler)
    item(f, '/v1/things/:thingId', ['GET', 'PUT', 'PATCH', 'DELETE'])
    // complete: the items at the top level (as chapters and lessons are)
    f.post('/v1/things/:thingId/parts', { schema: schema() }, handler)
    item(f, '/v1/parts/:partId', ['GET', 'PUT', 'PATCH', 'DELETE'])
    // complete: the caller's own item is `me`
    f.post('/v1/members', { schema: schema() }, handler)
    item(f, '/v1/members/:memberId', ['GET'])
    item(f, '/v1/members/me', ['PUT', 'PATCH', 'DELETE'])
    // an action route is no collection
    f.post('/v1/things/:thingId/resend', { schema: schema() }, handler)
    // planted: no DELETE on its items
    f.post('/v1/widgets', { schema: schema() }, handler)
    item(f, '/v1/widgets/:widgetId', ['GET', 'PUT', 'PATCH'])
    // planted: no item routes at all
    f.post('/v1/gadgets', { schema: schema() }, handler)
  })
  const findings = checkCollections(routes)
  t.same(rules(findings), ['collection-pattern POST /v1/gadgets', 'collection-pattern POST /v1/widgets'])
  t.match(findings.find(f => f.where === 'POST /v1/widgets')?.message, /^its items lack DELETE;/)
  t.match(findings.find(f => f.where === 'POST /v1/gadgets')?.message, /^its items lack GET, PUT, PATCH, DELETE;/)
  const all = checkAll({ routes, schemas: {}, tables: [] })
  t.same(rules(all.filter(f => f.rule === 'collection-pattern')), rules(findings), 'checkAll runs the rule')

  const declared = { '/widgets': { without: ['DELETE'], reason: 'widgets are forever' } }
  t.same(rules(checkCollections(routes, declared)), ['collection-pattern POST /v1/gadgets'], 'a declared exception lets its methods out, no others')
  const tooLittle = { '/widgets': { without: ['PUT'], reason: 'not the missing one' } }
  t.same(rules(checkCollections(routes, tooLittle)), ['collection-pattern POST /v1/gadgets', 'collection-pattern POST /v1/widgets'])

  for (const [path, exception] of Object.entries(DECLARED.collections)) {
    t.ok(exception.reason.length > 10, `${path}: the exception says why`)
  }
})

t.test('every route has request and response schemas, catalogue errors, an operationId and tags', async t => {
  const { routes, schemas } = await table(t, f => {
    f.get('/v1/things/:thingId', { schema: schema({ operationId: 'getThing' }) }, handler) // good
    f.get('/v1/things/:thingId/parts', { schema: schema({ operationId: 'getThing' }) }, handler) // duplicate operationId
    const undocumented = { operationId: undefined, tags: undefined, summary: undefined, description: undefined }
    f.get('/v1/widgets/:widgetId', { schema: schema(undocumented, 'widgetId') }, handler)
    f.get('/v1/gadgets/:gadgetId', { schema: schema({ params: undefined }, 'gadgetId') }, handler) // no params schema
    f.post('/v1/gadgets', { schema: schema({ params: undefined }) }, handler) // no body schema
    f.put('/v1/gizmos/:gizmoId', { schema: schema({ body: Type.Object({ name: Type.String() }) }, 'gizmoId') }, handler) // body lets unknown properties in
    f.get('/v1/doodads/:doodadId', { schema: schema({ response: { ...errorResponses('ValidationFailed') } }, 'doodadId') }, handler) // no 2xx
    f.get(
      '/v1/knobs/:knobId',
      {
        schema: schema(
          { response: { 200: ref(Thing), 404: Type.Object({ message: Type.String() }), ...errorResponses('ValidationFailed') } },
          'knobId'
        )
      },
      handler
    ) // 404 not a Problem
    f.get(
      '/v1/dials/:dialId',
      { schema: schema({ response: { 200: ref(Thing), 418: ref(Problem), ...errorResponses('ValidationFailed') } }, 'dialId') },
      handler
    ) // not in the catalogue
    f.get('/v1/cogs/:cogId', { schema: schema({ response: { 200: ref(Thing) } }, 'cogId') }, handler) // input but no 422
    f.get('/v1/pins/:pinId', { schema: schema({ security: [{ bearerAuth: [] }] }, 'pinId') }, handler) // authenticated, no 401/403
    f.get('/v1/nuts/:nutId', { schema: schema({ hide: true }, 'nutId') }, handler) // hidden from the contract
  })
  t.same(rules(checkRouteSchemas(routes, schemas)), [
    'schema-description GET /v1/widgets/{widgetId}',
    'schema-documented GET /v1/nuts/{nutId}',
    'schema-errors GET /v1/cogs/{cogId}',
    'schema-errors GET /v1/dials/{dialId}',
    'schema-errors GET /v1/knobs/{knobId}',
    'schema-errors GET /v1/pins/{pinId}',
    'schema-errors GET /v1/pins/{pinId}',
    'schema-operation-id GET /v1/things/{thingId}/parts',
    'schema-operation-id GET /v1/widgets/{widgetId}',
    'schema-request GET /v1/gadgets/{gadgetId}',
    'schema-request POST /v1/gadgets',
    'schema-request PUT /v1/gizmos/{gizmoId}',
    'schema-response GET /v1/doodads/{doodadId}',
    'schema-summary GET /v1/widgets/{widgetId}',
    'schema-tags GET /v1/widgets/{widgetId}'
  ])
})

t.test('every list route takes bounded limit and offset and answers a named array plus total', async t => {
  const listSchema = (overrides: Record<string, unknown>) =>
    schema({
      params: Params({}),
      querystring: Type.Object({ ...PageQuery }, { additionalProperties: false }),
      response: { 200: ref(ThingList), ...errorResponses('ValidationFailed') },
      ...overrides
    })
  const { routes, schemas } = await table(t, f => {
    f.get('/v1/things', { schema: listSchema({}) }, handler) // good
    f.get(
      '/v2/things',
      { schema: listSchema({ querystring: Type.Object({ limit: PageQuery.limit, cursor: Type.Optional(Type.String()) }) }) },
      handler
    ) // good: keyset
    f.get('/v1/widgets', { schema: listSchema({}) }, handler) // answers `things`, not `widgets`
    f.get(
      '/v1/gadgets',
      {
        schema: listSchema({
          querystring: Type.Object({ limit: Type.Integer(), offset: Type.Integer() }),
          response: { 200: Type.Object({ gadgets: Type.Array(ref(Thing)), total: Type.Number() }) }
        })
      },
      handler
    )
    f.get('/v1/gizmos', { schema: listSchema({ querystring: undefined, response: { 200: Type.Array(ref(Thing)) } }) }, handler)
  })
  t.same(rules(checkLists(routes, schemas)), [
    'list GET /v1/gadgets', // limit unbounded
    'list GET /v1/gadgets', // offset without minimum
    'list GET /v1/gadgets', // total not an integer
    'list GET /v1/gizmos',
    'list GET /v1/gizmos',
    'list GET /v1/gizmos',
    'list GET /v1/gizmos',
    'list GET /v1/widgets'
  ])
})

t.test('JSON properties are snake_case and *_at properties use the shared DateTime', async t => {
  const { routes, schemas } = await table(t, f => {
    f.post(
      '/v1/things',
      {
        schema: schema({
          params: undefined,
          body: Type.Object({
            published_at: DateTimeInput,
            starts_date: DateOnly,
            firstName: Type.String(),
            sent_at: Type.String({ format: 'date-time' }),
            ends_date: Type.String()
          }),
          response: {
            200: Type.Object({
              createdAt: DateTime,
              updated_at: Type.String(),
              deleted_at: Type.Union([DateTime, Type.Null()]),
              nested: Type.Object({ Bad: Type.String() }),
              seen_at: DateTimeInput
            })
          }
        })
      },
      handler
    )
  })
  t.same(
    checkProperties(routes, schemas)
      .map(f => f.message)
      .sort(),
    [
      'body /ends_date: a *_date property must use the shared DateOnly schema',
      'body /firstName: "firstName" is not snake_case',
      'body /sent_at: a *_at property must use the shared DateTime schema (or DateTimeInput)',
      'response 200 /createdAt: "createdAt" is not snake_case',
      'response 200 /nested/Bad: "Bad" is not snake_case',
      'response 200 /seen_at: a *_at property must use the shared DateTime schema',
      'response 200 /updated_at: a *_at property must use the shared DateTime schema'
    ]
  )
})

t.test('no query parameter is named like a token', async t => {
  const { routes, schemas } = await table(t, f => {
    f.get(
      '/v1/things/:thingId',
      {
        schema: schema({
          querystring: Type.Object({
            access_token: Type.Optional(Type.String()),
            token: Type.Optional(Type.String()),
            api_key: Type.Optional(Type.String()),
            sortOrder: Type.Optional(Type.String()),
            tags: Type.Optional(Type.String())
          })
        })
      },
      handler
    )
  })
  t.same(
    checkQueryNames(routes, schemas)
      .map(f => `${f.rule} ${f.message}`)
      .sort(),
    [
      'query-no-token query parameter "access_token" is named like a credential',
      'query-no-token query parameter "api_key" is named like a credential',
      'query-no-token query parameter "token" is named like a credential',
      'query-snake-case query parameter "sortOrder" is not snake_case'
    ]
  )
})

t.test('tables are singular snake_case; date-times end _at and dates _date', async t => {
  const database = await freshDatabase(t)
  const db = createDb(database.url, { schema: database.schema })
  t.teardown(() => db.destroy())
  await db.schema
    .createTable('good_thing')
    .addColumn('id', 'text')
    .addColumn('created_at', sql.raw('timestamptz'))
    .addColumn('starts_date', 'date')
    .addColumn('status', 'text')
    .execute()
  await db.schema.createTable('things').addColumn('id', 'text').execute()
  await db.schema.createTable('BadThing').addColumn('id', 'text').execute()
  await db.schema
    .createTable('widget')
    .addColumn('published', sql.raw('timestamptz'))
    .addColumn('birthday', 'date')
    .addColumn('seen_at', 'integer')
    .addColumn('ends_date', 'integer')
    .addColumn('firstName', 'text')
    .execute()
  const findings = checkTables(await collectTables(db))
  t.same(rules(findings), [
    'column-at table widget.published',
    'column-at table widget.seen_at',
    'column-date table widget.birthday',
    'column-date table widget.ends_date',
    'column-snake-case table widget.firstName',
    'table-singular table things',
    'table-snake-case table BadThing'
  ])
})

t.test('checkAll runs every rule and formatFindings lists them', async t => {
  const { routes, schemas } = await table(t, f => {
    f.get('/v1/thing/:id', { schema: schema() }, handler)
  })
  const findings = checkAll({ routes, schemas, tables: [{ name: 'things', columns: [] }] })
  t.same([...new Set(findings.map(f => f.rule))].sort(), ['param-name', 'path-plural', 'schema-request', 'table-singular'])
  t.match(formatFindings(findings), /^conventions: 5 findings\n {2}\[param-name\]/)
  t.equal(formatFindings([]), 'conventions: no findings')
})
