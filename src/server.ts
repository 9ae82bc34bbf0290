import closeWithGrace from 'close-with-grace'
import Fastify from 'fastify'
import app from './app.js'
import { ConfigError, loadConfig } from '../plugins/config.js'
import { serverOptions } from './options.js'

/** Reads config, builds the app, listens, and shuts down gracefully. Nothing else. */
async function main () {
  let config
  try {
    config = loadConfig(process.env, { dotenv: true })
  } catch (err) {
    if (err instanceof ConfigError) {
      console.error(err.message)
      process.exit(78) // EX_CONFIG
    }
    throw err
  }
  const server = Fastify(serverOptions(config))
  if (config.jwtSecretGenerated) server.log.warn('JWT_SECRET is not set: using a random key, tokens end with this process')

  closeWithGrace({ delay: config.SHUTDOWN_GRACE_MS, logger: server.log }, async ({ signal, err }) => {
    if (err) server.log.error({ err }, 'closing after an error')
    else server.log.info({ signal }, 'closing: finishing in-flight requests')
    await server.close()
  })

  await server.register(app, { config })
  await server.listen({ host: config.HOST, port: config.PORT })
}

await main()
