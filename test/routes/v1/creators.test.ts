import t from 'tap'
import { build, json } from '../../helper.js'
import { createCreator, createUser } from '../../fixtures.js'

t.test('GET /v1/creators/{profileId}', async (t) => {
  const app = await build(t)

  t.test('answers a creator\'s public profile, public and with an ETag', async (t) => {
    const creator = await createCreator(app, { firstName: 'Maya' })
    const res = await app.inject({ method: 'GET', url: `/v1/creators/${creator.id}` })
    t.equal(res.statusCode, 200)
    t.match(json(res), { id: creator.id, username: creator.username, first_name: 'Maya', is_creator: true })
    t.notOk('email' in json(res), 'no e-mail')
    t.ok(res.headers.etag)
    const cached = await app.inject({ method: 'GET', url: `/v1/creators/${creator.id}`, headers: { 'if-none-match': res.headers.etag as string } })
    t.equal(cached.statusCode, 304)
  })

  t.test('404 ProfileNotCreator for a profile that is not a creator\'s', async (t) => {
    const user = await createUser(app)
    const res = await app.inject({ method: 'GET', url: `/v1/creators/${user.id}` })
    t.equal(res.statusCode, 404)
    t.equal(json(res).code, 'ProfileNotCreator')
    t.equal(res.headers['content-type'], 'application/problem+json; charset=utf-8')
  })

  t.test('404 ProfileNotFound for an unknown id', async (t) => {
    const res = await app.inject({ method: 'GET', url: '/v1/creators/7f1d3c1e-8b1a-4c39-9a0e-2f1c7e5d9b10' })
    t.equal(res.statusCode, 404)
    t.equal(json(res).code, 'ProfileNotFound')
  })

  t.test('422 for a malformed id', async (t) => {
    const res = await app.inject({ method: 'GET', url: '/v1/creators/123' })
    t.equal(res.statusCode, 422)
    t.equal(json(res).errors[0].in, 'path')
  })

  t.test('the OpenAPI document declares both 404s', async (t) => {
    const op = app.openapi('v1').paths['/v1/creators/{profileId}'].get
    t.equal(op.operationId, 'getCreator')
    t.match(op.responses['404'].description, /ProfileNotFound/)
    t.match(op.responses['404'].description, /ProfileNotCreator/)
  })
})
