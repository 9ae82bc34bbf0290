import fp from 'fastify-plugin'

/**
 * One log line per request at info, written when the answer has gone: method, url, status and
 * time together (Fastify's own logging writes two, one on arrival; at thousands of requests a
 * second the second line is a tenth of the work). At debug the arrival is logged too, for
 * following a request that never finishes (the level is read once, at start).
 */
export default fp(async (fastify) => {
  if (fastify.log.level === 'debug' || fastify.log.level === 'trace') {
    fastify.addHook('onRequest', (request, _reply, done) => {
      request.log.debug({ req: request }, 'incoming request')
      done()
    })
  }
  fastify.addHook('onResponse', (request, reply, done) => {
    request.log.info({ req: request, res: reply, responseTime: reply.elapsedTime }, 'request completed')
    done()
  })
}, { name: 'request-log' })
