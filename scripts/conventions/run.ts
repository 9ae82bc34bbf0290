import Fastify from 'fastify'
import app from '../../src/app.js'
import type { Config } from '../../plugins/config.js'
import { serverOptions } from '../../src/options.js'
import { checkAll, type Finding } from './check.js'
import { collectRoutes, collectSchemas, collectTables } from './collect.js'

/** Builds the real app (routes collected as they are added), runs every rule, closes the app. */
export async function checkApp (config: Config, dbSchema?: string): Promise<Finding[]> {
  const server = Fastify(serverOptions(config))
  const routes = collectRoutes(server)
  try {
    await server.register(app, { config, dbSchema })
    await server.ready()
    return checkAll({ routes, schemas: collectSchemas(server), tables: await collectTables(server.db) })
  } finally {
    await server.close()
  }
}
