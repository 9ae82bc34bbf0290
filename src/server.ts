import closeWithGrace from 'close-with-grace'
import Fastify, { type FastifyInstance } from 'fastify'
import app from './app.js'
import { ConfigError, loadConfig, type Config } from '../plugins/config.js'
import { MigrationError } from './db/migrate.js'
import { serverOptions } from './options.js'

/** Exit codes of a failed start, one per cause (sysexits.h), so a supervisor can tell them apart. */
const EXIT = { config: 78, database: 69, migration: 65, listen: 75, other: 1 } as const

/** Reads config, builds the app, listens, and shuts down gracefully. Nothing else. */
async function main () {
  let config
  try {
    config = loadConfig(process.env, { dotenv: true })
  } catch (err) {
    if (err instanceof ConfigError) {
      console.error(err.message)
      process.exit(EXIT.config)
    }
    throw err
  }
  const server = Fastify(serverOptions(config))
  if (config.jwtSecretGenerated) server.log.warn('JWT_SECRET is not set: using a random key, tokens end with this process')

  // SIGINT and SIGTERM are handled below; close-with-grace keeps the others and uncaught errors.
  const grace = closeWithGrace({ delay: config.SHUTDOWN_GRACE_MS, logger: server.log, skip: ['SIGINT', 'SIGTERM'] }, async ({ err }) => {
    if (err) server.log.error({ err }, 'closing after an error')
    const started = Date.now()
    await server.close()
    server.log.info({ ms: Date.now() - started }, 'closed: in-flight requests answered, database closed')
  })
  let closingSince = 0
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.on(signal, () => {
      // Ctrl-C in a terminal reaches npm and node at once, and npm passes it on: a repeat within a
      // second is that echo, not a second request; a later one stops at once.
      if (closingSince === 0) {
        closingSince = Date.now()
        server.log.info({ signal }, 'closing: finishing in-flight requests')
        void grace.close()
      } else if (Date.now() - closingSince > 1000) {
        server.log.error({ signal }, 'second signal while closing: exiting now')
        process.exit(1)
      }
    })
  }

  try {
    await server.register(app, { config })
    await server.listen({ host: config.HOST, port: config.PORT, listenTextResolver: address => listening(address, config) })
  } catch (err) {
    const failure = startFailure(err as NodeJS.ErrnoException, config)
    server.log.fatal({ exitCode: failure.exitCode, code: (err as NodeJS.ErrnoException).code }, failure.message)
    grace.uninstall()
    await closeQuietly(server)
    process.exit(failure.exitCode)
  }
}

/** The start-up line: where the API and its docs are. */
function listening (address: string, config: Config): string {
  const docs = config.docsEnabled ? `docs at ${address}/docs` : `docs off (ENVIRONMENT=${config.ENVIRONMENT})`
  return `Server listening at ${address}: API at ${address}/v1, ${docs}, health at ${address}/health`
}

// Driver errors that mean "no database there" (not "the database said no to a statement").
const UNREACHABLE = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'ETIMEDOUT', 'EHOSTUNREACH', 'ECONNRESET',
  '28P01', '28000', '3D000', '57P03', 'SQLITE_CANTOPEN'])

/** One readable sentence and an exit code for an error that stopped the start. */
function startFailure (err: NodeJS.ErrnoException, config: Config): { exitCode: number, message: string } {
  const cause = err.message.split('\n')[0]
  if (err.code === 'EADDRINUSE') return { exitCode: EXIT.listen, message: `cannot listen: ${config.HOST}:${config.PORT} is already in use` }
  if (err.code === 'EACCES' || err.code === 'EADDRNOTAVAIL') return { exitCode: EXIT.listen, message: `cannot listen on ${config.HOST}:${config.PORT}: ${cause}` }
  if (err instanceof MigrationError) return { exitCode: EXIT.migration, message: `${cause} (database ${databaseName(config.databaseUrl)})` }
  if (err.code && UNREACHABLE.has(err.code)) {
    return { exitCode: EXIT.database, message: `cannot reach the database at ${databaseName(config.databaseUrl)}: ${cause || err.code}` }
  }
  return { exitCode: EXIT.other, message: `start failed: ${cause}` }
}

/** host:port/name of a PostgreSQL URL (never its password), or the SQLite file. */
function databaseName (url: string): string {
  if (url.startsWith('sqlite:')) return url.slice('sqlite:'.length)
  const parsed = new URL(url)
  return `${parsed.hostname}:${parsed.port || 5432}${parsed.pathname}`
}

async function closeQuietly (server: FastifyInstance) {
  try { await server.close() } catch { /* the start failed; what is open goes with the process */ }
}

await main()
