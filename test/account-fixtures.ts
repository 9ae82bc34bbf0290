import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import type { FastifyInstance } from 'fastify'
import { PASSWORD } from './fixtures.js'
import { json } from './helper.js'

/** The account flows as a person goes through them: sign-up over HTTP, mail read from the .eml files Roja writes. */

export interface Mail { to: string, subject: string, text: string, file: string }

const seen = new WeakMap<FastifyInstance, Set<string>>()

/** Delivers what is due and answers the .eml files written since the last call, oldest first. */
export async function newMail (app: FastifyInstance): Promise<Mail[]> {
  while ((await app.outbox.runOnce()).claimed > 0) { /* deliver everything due */ }
  const dir = app.outbox.mailDir
  if (!existsSync(dir)) return []
  const known = seen.get(app) ?? new Set<string>()
  seen.set(app, known)
  const out: Mail[] = []
  for (const name of readdirSync(dir).filter(f => f.endsWith('.eml'))) {
    if (known.has(name)) continue
    known.add(name)
    const raw = readFileSync(join(dir, name), 'utf8')
    const [folded, ...rest] = raw.split(/\r?\n\r?\n/)
    const head = folded.replace(/\r?\n[ \t]/g, ' ')
    out.push({
      to: /^To: (.*)$/mi.exec(head)?.[1].trim() ?? '',
      subject: /^Subject: (.*)$/mi.exec(head)?.[1].trim() ?? '',
      text: rest.join('\n\n').replace(/\r\n/g, '\n'),
      file: name
    })
  }
  return out
}

/** The one link of a mail (a line of its own, indented), as a person copies it. */
export function linkIn (mail: Mail): URL {
  const match = /^ {2}(https?:\/\/\S+)$/m.exec(mail.text)
  if (!match) throw new Error(`no link line in:\n${mail.text}`)
  return new URL(match[1])
}

export const tokenIn = (mail: Mail): string => linkIn(mail).searchParams.get('token')!

/** Signs a person up through the API and confirms the address from the mailed link; a token for them, and the mail to them. */
export async function signUpVerified (app: FastifyInstance, username: string, opts: { first?: string, last?: string, verify?: boolean } = {}) {
  const email = `${username}@example.com`
  const res = await app.inject({
    method: 'POST',
    url: '/v1/profiles',
    payload: { username, email, password: PASSWORD, first_name: opts.first ?? 'Ada', last_name: opts.last ?? 'Lovelace' }
  })
  if (res.statusCode !== 201) throw new Error(`sign-up: ${res.statusCode} ${res.body}`)
  const mails = (await newMail(app)).filter(m => m.to === email)
  if (opts.verify !== false) {
    const confirmed = await app.inject({ method: 'POST', url: '/v1/email-verifications', payload: { token: tokenIn(mails[0]) } })
    if (confirmed.statusCode !== 204) throw new Error(`verify: ${confirmed.statusCode} ${confirmed.body}`)
  }
  return { id: json(res).id as string, username, email, headers: await signIn(app, username), mails }
}

/** `{ authorization }` for a fresh token of username and password, or throws with the answer. */
export async function signIn (app: FastifyInstance, username: string, password = PASSWORD): Promise<{ authorization: string }> {
  const res = await app.inject({ method: 'POST', url: '/v1/auth/token', payload: { username, password } })
  if (res.statusCode !== 200) throw new Error(`sign-in: ${res.statusCode} ${res.body}`)
  return { authorization: `Bearer ${json(res).access_token as string}` }
}

/** The status a token gets on GET /v1/profiles/me: 200 alive, 401 ended. */
export const tokenStatus = async (app: FastifyInstance, headers: { authorization: string }) =>
  (await app.inject({ method: 'GET', url: '/v1/profiles/me', headers })).statusCode
