import t from 'tap'
import { loadConfig } from '../plugins/config.js'
import { build, json, TEST_SECRET } from './helper.js'
import { createCreator } from './fixtures.js'

/**
 * Stored URLs are the URLs that were checked: a media_url/avatar_url must already be in its
 * WHATWG normal form, so no parser can find another host in what is stored.
 */
const HOST_RULE = 'files are to be uploaded only to internal services'
const GOOD = 'http://127.0.0.1:3000/v1/media/7f1d3c1e-8b1a-4c39-9a0e-2f1c7e5d9b10'

const TRICKS = [
  'http://127.0.0.1:3000\\@evil.com/a.png', // WHATWG: host 127.0.0.1; curl and urlsplit: evil.com
  'http://127.0.0.1:3000\\\\@evil.com/a.png',
  'http://１２７.０.０.１:3000/a.png', // full-width digits, which WHATWG folds to ASCII
  'http://127.0.0.1:３０００/a.png',
  'http://127.0.0.1:3000/a\t.png', // WHATWG drops tabs and newlines wherever they are
  'http://127.0.0.1:\t3000/a.png',
  'http://127.0.0.1:3000/a\n.png',
  ' http://127.0.0.1:3000/a.png',
  'HTTP://127.0.0.1:3000/a.png',
  'http://127.0.0.1:3000/a b.png',
  'http://127.0.0.1:3000/./a.png',
  'http://user:pass@127.0.0.1:3000/a.png',
  'http://evil.com@127.0.0.1:3000/a.png',
  'http://2130706433:3000/a.png', // 127.0.0.1 as one number
  'http:/127.0.0.1:3000/a.png',
  'http://127.0.0.1:3000'
]

t.test('avatar_url and media_url: tricks that parse differently are refused, nothing stored', async (t) => {
  const app = await build(t)
  const user = await createCreator(app)
  for (const url of TRICKS) {
    const profile = await app.inject({ method: 'PUT', url: '/v1/profiles/me', headers: user.headers, payload: { first_name: 'X', avatar_url: url } })
    t.equal(profile.statusCode, 422, `avatar_url ${JSON.stringify(url)}`)
    t.same(json(profile).errors, [{ in: 'body', field: '/avatar_url', rule: 'format', message: HOST_RULE }])
    const post = await app.inject({ method: 'POST', url: '/v1/posts', headers: user.headers, payload: { title: 'T', type: 'ARTICLE', media_url: url } })
    t.equal(post.statusCode, 422, `media_url ${JSON.stringify(url)}`)
  }
  const me = json(await app.inject({ method: 'GET', url: '/v1/profiles/me', headers: user.headers }))
  t.equal(me.avatar_url, null, 'no trick was stored')
})

t.test('a URL in its normal form on an allowed host is stored exactly as checked', async (t) => {
  const app = await build(t)
  const user = await createCreator(app)
  for (const url of [GOOD, 'http://127.0.0.1:3000/a%20b.png', 'http://127.0.0.1:3000/a.png?x=1#y']) {
    t.equal(new URL(url).href, url, 'the fixture is in normal form')
    const res = await app.inject({ method: 'PUT', url: '/v1/profiles/me', headers: user.headers, payload: { first_name: 'X', avatar_url: url } })
    t.equal(res.statusCode, 200, url)
    t.equal(json(res).avatar_url, url)
  }
})

t.test('production: media URLs must be https', async (t) => {
  const env = { ENVIRONMENT: 'production', TRUST_PROXY: '127.0.0.1', MEDIA_PUBLIC_URL: 'https://media.example.com' }
  const app = await build(t, { env })
  const user = await createCreator(app)
  const headers = { ...user.headers, 'x-forwarded-proto': 'https' }
  const put = (avatar: string) => app.inject({ method: 'PUT', url: '/v1/profiles/me', headers, payload: { first_name: 'X', avatar_url: avatar } })
  const plain = await put('http://media.example.com/a.png')
  t.equal(plain.statusCode, 422, 'http is refused')
  t.equal(json(plain).errors[0].message, HOST_RULE)
  t.equal((await put('https://media.example.com/a.png')).statusCode, 200, 'https is accepted')

  const local = await build(t, { env: { MEDIA_PUBLIC_URL: 'https://media.example.com' } })
  const other = await createCreator(local)
  const res = await local.inject({ method: 'PUT', url: '/v1/profiles/me', headers: other.headers, payload: { first_name: 'X', avatar_url: 'http://media.example.com/a.png' } })
  t.equal(res.statusCode, 200, 'outside production http is still accepted (local development)')
})

t.test('production: MEDIA_PUBLIC_URL must be https; its default is', async (t) => {
  const base = { ENVIRONMENT: 'production', JWT_SECRET: TEST_SECRET, TRUST_PROXY: '10.0.0.1' }
  t.throws(() => loadConfig({ ...base, MEDIA_PUBLIC_URL: 'http://media.example.com' }), /MEDIA_PUBLIC_URL must be https/)
  t.equal(loadConfig({ ...base, HOST: '0.0.0.0', PORT: '8080' }).mediaPublicUrl, 'https://0.0.0.0:8080')
  t.equal(loadConfig({ HOST: '0.0.0.0', PORT: '8080' }).mediaPublicUrl, 'http://0.0.0.0:8080')
})
