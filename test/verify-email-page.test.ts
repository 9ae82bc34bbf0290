import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import type { FastifyInstance } from 'fastify'
import t from 'tap'
import { PASSWORD } from './fixtures.js'
import { build, json } from './helper.js'

/**
 * With the defaults (no SMTP_URL, no EMAIL_VERIFY_URL) a person verifies their address by opening
 * the link in the .eml file Roja writes and pressing the button on the page it opens.
 */

async function signUpAndDeliver (app: FastifyInstance) {
  const res = await app.inject({
    method: 'POST',
    url: '/v1/profiles',
    payload: { username: 'ada', email: 'ada@example.com', password: PASSWORD, first_name: 'Ada' }
  })
  if (res.statusCode !== 201) throw new Error(`sign-up: ${res.statusCode} ${res.body}`)
  t.same(await app.outbox.runOnce(), { claimed: 1, sent: 1, failed: 0 })
  const [file] = readdirSync(app.outbox.mailDir).filter(f => f.endsWith('.eml'))
  const eml = readFileSync(join(app.outbox.mailDir, file), 'utf8')
  const token = json(await app.inject({ method: 'POST', url: '/v1/auth/token', payload: { username: 'ada', password: PASSWORD } })).access_token
  return { id: json(res).id as string, eml, headers: { authorization: `Bearer ${token as string}` } }
}

const verified = async (app: FastifyInstance, headers: Record<string, string>) =>
  json(await app.inject({ method: 'GET', url: '/v1/profiles/me', headers })).email_verified as boolean

/** The link as a person reads it off the mail, and the form's fields as a browser would submit them. */
function linkOf (eml: string): URL {
  const match = /^ {2}(http:\/\/\S+)$/m.exec(eml)
  if (!match) throw new Error(`no link line in:\n${eml}`)
  return new URL(match[1])
}
function formOf (html: string): { action: string; fields: URLSearchParams } {
  const action = /<form method="post" action="([^"]+)">/.exec(html)?.[1]
  if (!action) throw new Error(`no form in:\n${html}`)
  const fields = new URLSearchParams()
  for (const m of html.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)">/g)) {
    fields.append(
      m[1],
      m[2].replace(/&#(\d+);/g, (_, c) => String.fromCharCode(Number(c)))
    )
  }
  return { action, fields }
}

t.test('the .eml is plain 7-bit text: the link stands on one line, copied as written', async t => {
  const app = await build(t)
  const { eml } = await signUpAndDeliver(app)
  t.match(eml, /^Content-Transfer-Encoding: 7bit$/m)
  t.notMatch(eml, /quoted-printable|=3D/)
  t.match(linkOf(eml).href, /^http:\/\/127\.0\.0\.1:3000\/verify-email\?token=[\w-]{22}$/)
})

t.test('opening the link shows a form and verifies nothing; pressing its button verifies the address', async t => {
  const logs: string[] = []
  const app = await build(t, { logs })
  const { eml, headers } = await signUpAndDeliver(app)
  const link = linkOf(eml)

  const opened = await app.inject({
    method: 'GET',
    url: `${link.pathname}${link.search}`,
    headers: { accept: 'text/html,application/xhtml+xml,*/*;q=0.8' }
  })
  t.equal(opened.statusCode, 200)
  t.match(opened.headers['content-type'], /^text\/html; charset=utf-8/)
  t.equal(opened.headers['cache-control'], 'no-store')
  t.match(opened.headers['content-security-policy'], /default-src 'none'; form-action 'self'/)
  t.notMatch(opened.body, /<script/i, 'works without JavaScript')
  t.equal(await verified(app, headers), false, 'a fetch of the link (a mail scanner) verifies nothing')

  const form = formOf(opened.body)
  const action = new URL(form.action, link)
  t.equal(action.pathname, '/verify-email', 'the form posts back to the page')
  t.notOk(action.search, "the token is not in the form's URL")
  const pressed = await app.inject({
    method: 'POST',
    url: action.pathname,
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    payload: form.fields.toString()
  })
  t.equal(pressed.statusCode, 200)
  t.match(pressed.body, /Your e-mail address is confirmed/)
  t.equal(await verified(app, headers), true)

  const again = await app.inject({
    method: 'POST',
    url: '/verify-email',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    payload: form.fields.toString()
  })
  t.equal(again.statusCode, 200, 'pressing twice is harmless')

  const token = link.searchParams.get('token')!
  t.same(
    logs.filter(l => l.includes(token)),
    [],
    'no log line holds the token'
  )
  t.ok(
    logs.some(l => l.includes('/verify-email?token=[redacted]')),
    'the request line shows the link redacted'
  )
})

t.test('a broken, tampered or missing token gets a readable page, and verifies nothing', async t => {
  const app = await build(t)
  const { eml, headers } = await signUpAndDeliver(app)
  const token = linkOf(eml).searchParams.get('token')!
  const tampered = `${token.slice(0, -2)}${token.endsWith('AA') ? 'BB' : 'AA'}`
  const post = (body: string) =>
    app.inject({ method: 'POST', url: '/verify-email', headers: { 'content-type': 'application/x-www-form-urlencoded' }, payload: body })

  const bad = await post(`token=${encodeURIComponent(tampered)}`)
  t.equal(bad.statusCode, 422)
  t.match(bad.headers['content-type'], /^text\/html/)
  t.match(bad.body, /This link does not work/)
  t.notOk(bad.body.includes(tampered), 'the page does not echo the token')

  const incomplete = await app.inject({ method: 'GET', url: '/verify-email' })
  t.equal(incomplete.statusCode, 400)
  t.match(incomplete.body, /This link is incomplete/)

  const markup = await app.inject({ method: 'GET', url: `/verify-email?token=${encodeURIComponent('"><script>x</script>')}` })
  t.notMatch(markup.body, /<script>/, 'the token is escaped into the form')

  t.equal((await post(`token=${encodeURIComponent(token)}`)).statusCode, 200, 'the genuine token still works after the failures')
  t.equal(await verified(app, headers), true)
})

t.test('the page takes only a form; every other token name in its query is still refused', async t => {
  const app = await build(t)
  const json415 = await app.inject({
    method: 'POST',
    url: '/verify-email',
    headers: { 'content-type': 'application/json' },
    payload: '{"token":"x.y"}'
  })
  t.equal(json415.statusCode, 415)
  const elsewhere = await app.inject({ method: 'GET', url: '/v1/posts?token=abc' })
  t.equal(elsewhere.statusCode, 400, 'token in the query of an API route: still TokenInQuery')
  t.equal(json(elsewhere).code, 'TokenInQuery')
})
