import t from 'tap'
import { banUser, revokeTokens, unbanUser } from '../src/domain/users.js'
import { build, migratedDatabase, json } from './helper.js'
import { createUser, PASSWORD } from './fixtures.js'

/**
 * A per-user token generation: `user revoke-tokens` and a ban end every token issued before,
 * at once and on every instance (two apps on one database here), through the user row that
 * authentication reads anyway.
 */
t.test('revoking and banning end old tokens on every instance at once', async (t) => {
  const database = await migratedDatabase(t, { persistent: true })
  const a = await build(t, { database })
  const b = await build(t, { database })
  const user = await createUser(a, { username: 'ada' })
  const login = async () => {
    const res = await a.inject({ method: 'POST', url: '/v1/auth/token', payload: { username: 'ada', password: PASSWORD } })
    t.equal(res.statusCode, 200)
    return { authorization: `Bearer ${json(res).access_token as string}` }
  }
  const status = async (headers: Record<string, string>) => [
    (await a.inject({ method: 'GET', url: '/v1/profiles/me', headers })).statusCode,
    (await b.inject({ method: 'GET', url: '/v1/profiles/me', headers })).statusCode,
    (await b.inject({ method: 'GET', url: '/v1/users/me/posts', headers })).statusCode
  ]

  const first = await login()
  t.same(await status(first), [200, 200, 200], 'a fresh token works on both instances')
  t.same(await status(user.headers), [200, 200, 200])

  await revokeTokens(a.db, 'ada') // what `npm run cli -- user revoke-tokens ada` runs
  t.same(await status(first), [401, 401, 401], 'after revoke-tokens the old token is refused everywhere')
  t.same(await status(user.headers), [401, 401, 401])
  const refused = await b.inject({ method: 'GET', url: '/v1/users/me/posts', headers: first })
  t.equal(json(refused).code, 'InvalidCredentials')

  const second = await login()
  t.same(await status(second), [200, 200, 200], 'a new login works')

  await banUser(a.db, 'ada')
  t.same(await status(second), [403, 403, 403], 'a banned caller is told so')
  await unbanUser(a.db, 'ada')
  t.same(await status(second), [401, 401, 401], 'an unban does not bring them back')
  t.same(await status(await login()), [200, 200, 200], 'the unbanned user logs in again')
})
