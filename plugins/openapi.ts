import swagger from '@fastify/swagger'
import swaggerUi from '@fastify/swagger-ui'
import fp from 'fastify-plugin'
import { Type } from '../schemas/typebox.js'
import { descriptions } from '../schemas/descriptions.js'
import { describeDocument, type RouteFacts } from './openapi-document.js'

const LOGO = '<svg xmlns="http://www.w3.org/2000/svg" width="120" height="40" viewBox="0 0 120 40">' +
  '<rect width="120" height="40" rx="6" fill="#b3202a"/>' +
  '<text x="60" y="28" font-family="Helvetica, Arial, sans-serif" font-size="22" font-weight="700" fill="#fff" text-anchor="middle">Roja</text></svg>'

export const API_VERSIONS = ['v1', 'v2'] as const
export type ApiVersion = typeof API_VERSIONS[number]

type Doc = Record<string, any>

export interface OpenApiOptions {
  /** the API's version in `info.version` (the package's) */
  version: string
}

declare module 'fastify' {
  interface FastifyInstance {
    /** the OpenAPI document of one API version */
    openapi: (version: ApiVersion) => Doc
  }
}

/**
 * OpenAPI 3.1 from the route schemas (@fastify/swagger), split by version: each document holds
 * its own `/vN` paths plus the unversioned operational routes, and only the components it uses.
 * Served at /openapi/{version}.json and /docs in local and staging only.
 */
export default fp<OpenApiOptions>(async (fastify, opts) => {
  await fastify.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Roja API',
        version: opts.version,
        description: 'Resource-oriented JSON API of the Roja creator platform.',
        license: { name: 'MIT', identifier: 'MIT' },
        contact: { name: 'Roja maintainers', url: 'https://roja.dev' }
      },
      servers: [{ url: '/' }],
      components: {
        securitySchemes: { bearerAuth: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT' } }
      }
    },
    // Component names come from each schema's $id, never def-N.
    refResolver: { buildLocalReference: (json, _base, _fragment, i) => String(json.$id ?? `def-${i}`) }
  })

  // What each operation does beyond its schema (ETags, idempotency, paging, rate limit, deprecation).
  const facts = new Map<string, RouteFacts>()
  fastify.addHook('onRoute', (route) => {
    const operationId = route.schema?.operationId as string | undefined
    if (!operationId) return
    route.schema!.description ??= descriptions[operationId]?.join(' ')
    const query = route.schema?.querystring as { properties?: Record<string, unknown> } | undefined
    facts.set(operationId, {
      etag: Boolean(route.config?.etag),
      idempotent: Boolean(route.config?.idempotent),
      paged: Boolean(query?.properties?.offset ?? query?.properties?.page),
      rateLimited: route.config?.rateLimit !== false,
      deprecated: route.config?.deprecated
    })
  })

  const cache = new Map<ApiVersion, Doc>()
  fastify.decorate('openapi', (version: ApiVersion) => {
    let doc = cache.get(version)
    if (!doc) {
      doc = stable(describeDocument(splitByVersion(fastify.swagger() as Doc, version), facts), true) as Doc
      cache.set(version, doc)
    }
    return doc
  })

  if (!fastify.config.docsEnabled) return

  fastify.get('/openapi/:version.json', {
    schema: {
      hide: true,
      params: Type.Object({ version: Type.Union(API_VERSIONS.map(v => Type.Literal(v))) }, { additionalProperties: false })
    }
  }, async (request) => fastify.openapi((request.params as { version: ApiVersion }).version))

  await fastify.register(swaggerUi, {
    routePrefix: '/docs',
    // Roja's name on the page and its tab, not the framework's
    theme: { title: 'Roja API docs' },
    logo: { type: 'image/svg+xml', content: LOGO, href: '/docs' },
    uiConfig: { urls: API_VERSIONS.map(v => ({ url: `/openapi/${v}.json`, name: v })) } as Record<string, unknown>,
    staticCSP: false
  })
}, { name: 'openapi', dependencies: ['config'] })

/**
 * Keys sorted at every level (the document's own top-level order kept): the order
 * scripts/export-openapi.ts commits, so the types a client generates from the served document are
 * the committed ones (client/*.d.ts), line for line.
 */
function stable (value: unknown, top = false): unknown {
  if (Array.isArray(value)) return value.map(v => stable(v))
  if (value === null || typeof value !== 'object') return value
  const order = top ? ['openapi', 'info', 'servers', 'tags', 'paths', 'components'] : []
  const keys = Object.keys(value).sort((a, b) => rank(order, a) - rank(order, b) || (a < b ? -1 : a > b ? 1 : 0))
  return Object.fromEntries(keys.map(k => [k, stable((value as Record<string, unknown>)[k])]))
}
const rank = (order: string[], key: string) => (order.includes(key) ? order.indexOf(key) : order.length)

export function splitByVersion (full: Doc, version: ApiVersion): Doc {
  const doc: Doc = structuredClone(full)
  doc.info.version = `${full.info.version} (${version})`
  doc.servers = [{ url: '/' }]
  doc.paths = Object.fromEntries(Object.entries(full.paths ?? {})
    .filter(([path]) => path.startsWith(`/${version}/`) || !/^\/v\d+\//.test(path)))
  // Keep only the components reachable from this version's paths.
  const schemas = full.components?.schemas ?? {}
  const used = new Set<string>()
  const visit = (node: unknown): void => {
    if (Array.isArray(node)) { node.forEach(visit); return }
    if (node === null || typeof node !== 'object') return
    for (const [key, value] of Object.entries(node)) {
      if (key === '$ref' && typeof value === 'string' && value.startsWith('#/components/schemas/')) {
        const name = value.slice('#/components/schemas/'.length)
        if (!used.has(name)) { used.add(name); visit(schemas[name]) }
      } else visit(value)
    }
  }
  visit(doc.paths)
  // Every tag the operations use, declared once at the top (tools group operations by them).
  const tags = new Set<string>()
  for (const item of Object.values<Doc>(doc.paths)) {
    for (const op of Object.values<Doc>(item)) {
      for (const tag of op.tags ?? []) tags.add(tag)
      // A query parameter with a default (limit, offset) may be left out: not required for clients.
      for (const p of op.parameters ?? []) if (p.in === 'query' && p.schema?.default !== undefined) p.required = false
    }
  }
  doc.tags = [...tags].sort().map(name => ({ name }))
  doc.components.schemas = Object.fromEntries(Object.entries(schemas).filter(([name]) => used.has(name)))
  return doc
}
