import { Ajv } from 'ajv'
import type { RouteOptions } from 'fastify'
import t from 'tap'
import app from '../src/app.js'
import { EnvSchema } from '../plugins/config.js'
import { components } from '../schemas/index.js'
import { freshDatabase, testConfig, testFastify, whileMigrating } from './helper.js'

// Roja's validators skip the meta-schema check at start (src/options.ts createAjv):
// every schema they compile is checked here instead, against draft-07 as Ajv would.
const ajv = new Ajv({ strict: false })

function invalid (where: string, schema: unknown): string[] {
  return ajv.validateSchema(schema as object) ? [] : [`${where}: ${ajv.errorsText()}`]
}

/** The JSON schemas of a route: each part, and each media type of a part that has `content`. */
function routeSchemas (route: RouteOptions): Array<[string, unknown]> {
  const out: Array<[string, unknown]> = []
  const add = (where: string, schema: any) => {
    if (schema?.content) for (const [type, media] of Object.entries<any>(schema.content)) out.push([`${where} ${type}`, media.schema])
    else out.push([where, schema])
  }
  const { body, querystring, params, headers, response } = (route.schema ?? {}) as Record<string, any>
  for (const [part, schema] of Object.entries({ body, querystring, params, headers })) if (schema) add(part, schema)
  for (const [status, schema] of Object.entries<any>(response ?? {})) add(`response ${status}`, schema)
  return out
}

t.test('the meta-schema check catches a broken schema', async (t) => {
  t.not(invalid('x', { type: 'object', properties: { a: { type: 'strin' } } }), [])
  t.not(invalid('x', { type: 'string', minLength: '3' }), [])
})

t.test('the env schema and every component schema are valid JSON Schema', async (t) => {
  t.same(invalid('EnvSchema', { ...EnvSchema, additionalProperties: false }), [])
  t.same(components.flatMap(schema => invalid(String(schema.$id), schema)), [])
})

t.test('every route\'s schemas are valid JSON Schema (the docs routes of local included)', async (t) => {
  const database = await freshDatabase(t)
  const config = testConfig({ ENVIRONMENT: 'local' }, database.url)
  const server = testFastify(config)
  const routes: RouteOptions[] = []
  server.addHook('onRoute', (route) => { routes.push(route) })
  t.teardown(() => server.close())
  await whileMigrating(async () => {
    await server.register(app, { config, dbSchema: database.schema })
    await server.ready()
  })
  const schemas = routes.flatMap(route => routeSchemas(route).map(([where, schema]) => [`${route.method} ${route.url} ${where}`, schema] as const))
  t.ok(schemas.length > 100, `${schemas.length} schemas of ${routes.length} routes`)
  t.same(schemas.flatMap(([where, schema]) => invalid(where, schema)), [])
})
