import { AppError } from '../../schemas/problems.js'
import type { Db, Executor } from '../db/dialect.js'
import { lockForUpdate } from '../db/row-lock.js'
import { writeTimeIso } from '../db/clock.js'
import { enqueueEmail } from './outbox.js'
import { dummyHash, hashPassword, verifyPassword } from './passwords.js'
import { issueVerificationToken, ttlInWords, type VerificationSettings } from './email-verification.js'
import { setPassword } from './password-reset.js'
import { normaliseUsername } from './users.js'
import type { MediaStorage } from './storage.js'

/**
 * A person's own account (DESIGN.md §7): the password, the address, the tokens, and leaving.
 * Each secret-bearing step takes the current password; each one that changes who can sign in
 * ends the account's other tokens by moving its token generation on.
 */

export const PASSWORD_CHANGED_SUBJECT = 'Your Roja password was changed'
export const EMAIL_CHANGE_SUBJECT = 'Confirm your new e-mail address for Roja'
export const EMAIL_CHANGE_NOTICE_SUBJECT = 'A new e-mail address was asked for your Roja account'

const wrongPassword = () => new AppError('WrongPassword', 'the current password is wrong', {
  errors: [{ in: 'body', field: '/current_password', rule: 'password', message: 'is not the account\'s password' }]
})

/** 403 WrongPassword unless `password` is the account's; a missing account costs the same scrypt. */
export async function checkCurrentPassword (db: Executor, userId: string, password: string, hashCost: number): Promise<void> {
  const user = await db.selectFrom('user').select('password_hash').where('id', '=', userId).executeTakeFirst()
  if (!(await verifyPassword(password, user?.password_hash ?? dummyHash(hashCost))) || !user) throw wrongPassword()
}

/**
 * PUT /profiles/me/password: the current password, then the new one set, every token issued so
 * far ended and every reset link gone, with a notice to a verified address, in one transaction.
 * Answers the new token generation, for the caller's fresh token.
 */
export async function changePassword (db: Db, userId: string, input: { current_password: string, new_password: string },
  hashCost: number): Promise<number> {
  await checkCurrentPassword(db, userId, input.current_password, hashCost)
  const passwordHash = await hashPassword(input.new_password, hashCost)
  return db.transaction().execute(async (trx) => {
    await lockForUpdate(trx, trx.selectFrom('user').select('id').where('id', '=', userId))
    const generation = await setPassword(trx, userId, passwordHash)
    const user = await trx.selectFrom('user').select(['username', 'email', 'email_verified_at'])
      .where('id', '=', userId).executeTakeFirstOrThrow()
    if (user.email_verified_at !== null) {
      await enqueueEmail(trx, {
        to: user.email,
        subject: PASSWORD_CHANGED_SUBJECT,
        body: [
          `Hello ${user.username},`,
          '',
          'the password of your Roja account was just changed, and every device',
          'signed in to it was signed out.',
          '',
          'If this was not you, ask for a password reset at once.',
          ''
        ].join('\n')
      })
    }
    return generation
  })
}

/** DELETE /profiles/me/tokens: every token of the account issued so far stops working. */
export async function endAllTokens (db: Db, userId: string): Promise<void> {
  await db.updateTable('user')
    .set(eb => ({ token_generation: eb('token_generation', '+', 1), updated_at: writeTimeIso() }))
    .where('id', '=', userId).execute()
}

/**
 * POST /profiles/me/email-changes: after the current password, a link to the new address that
 * makes it the account's once opened (confirmEmail), the account's earlier change links gone;
 * the current address, when verified, gets a notice with no link in it. An address that is
 * another account's gets nothing at all, and the caller the same 202: nobody learns whose it is.
 */
export async function requestEmailChange (db: Db, settings: VerificationSettings, userId: string,
  input: { current_password: string, email: string }, hashCost: number): Promise<void> {
  await checkCurrentPassword(db, userId, input.current_password, hashCost)
  const email = input.email.trim().toLowerCase()
  await db.transaction().execute(async (trx) => {
    const user = await trx.selectFrom('user').select(['id', 'username', 'email', 'email_verified_at'])
      .where('id', '=', userId).executeTakeFirstOrThrow()
    if (email === user.email) {
      throw new AppError('InvalidUserData', 'this is already the account\'s address', {
        errors: [{ in: 'body', field: '/email', rule: 'unchanged', message: 'is already the account\'s address' }]
      })
    }
    await trx.deleteFrom('email_verification').where('user_id', '=', userId).where('purpose', '=', 'change').execute()
    const taken = await trx.selectFrom('user').select('id').where('email', '=', email).executeTakeFirst()
    if (!taken) await queueChangeLink(trx, settings, { id: user.id, username: user.username, email })
    if (user.email_verified_at !== null) {
      await enqueueEmail(trx, {
        to: user.email,
        subject: EMAIL_CHANGE_NOTICE_SUBJECT,
        body: [
          `Hello ${user.username},`,
          '',
          'someone signed in to your Roja account asked to move it to another',
          'e-mail address. Nothing changes until that address is confirmed.',
          '',
          'If this was not you, change your password now: that also signs out',
          'every device signed in to your account.',
          ''
        ].join('\n')
      })
    }
  })
}

async function queueChangeLink (db: Executor, settings: VerificationSettings, user: { id: string, username: string, email: string }) {
  const link = new URL(settings.url)
  link.searchParams.set('token', await issueVerificationToken(db, settings, user, Date.now(), 'change'))
  const body = [
    `Hello ${user.username},`,
    '',
    'please confirm that this is the new e-mail address of your Roja account',
    'by opening this link:',
    '',
    `  ${link.href}`,
    '',
    `The link works for ${ttlInWords(settings.ttlSeconds)}; until then your account keeps its old address.`,
    'If you did not ask for this, ignore this message.',
    ''
  ].join('\n')
  await enqueueEmail(db, { to: user.email, subject: EMAIL_CHANGE_SUBJECT, body })
}

/** DELETE /profiles/me: the current password, then the whole account erased (eraseAccount). */
export async function deleteAccount (db: Db, storage: MediaStorage, userId: string, currentPassword: string, hashCost: number) {
  await checkCurrentPassword(db, userId, currentPassword, hashCost)
  await eraseAccount(db, storage, userId)
}

/** `user delete <username>` (src/cli.ts): the same erasure, for an operator. */
export async function deleteUserByName (db: Db, storage: MediaStorage, username: string): Promise<{ username: string }> {
  const name = normaliseUsername(username)
  const user = await db.selectFrom('user').select('id').where('username', '=', name).executeTakeFirst()
  if (!user) throw new AppError('ProfileNotFound', `no user named ${name}`)
  await eraseAccount(db, storage, user.id)
  return { username: name }
}

/** What others' alerts say of someone who has left, in place of their username. */
export const FORMER_MEMBER = 'a former member'

/**
 * Erases an account and everything that is the person's, in one transaction (docs/api.md,
 * "Deleting an account"): the user row, and by its cascades the profile, posts (with the reviews,
 * comments, chapters, lessons and alerts on them), the person's reviews and comments elsewhere,
 * shops and products, classes and students, alerts, media rows, uploads in progress, pending
 * links. The mail queued to or about the person goes too, sent or not; their idempotency records;
 * their address on others' class lists; and others' alerts name them no more. The media bytes are removed after the commit (a file is
 * never left without its row being gone first). The username is free again at once.
 */
export async function eraseAccount (db: Db, storage: MediaStorage, userId: string): Promise<void> {
  const keys = await db.transaction().execute(async (trx) => {
    await lockForUpdate(trx, trx.selectFrom('user').select('id').where('id', '=', userId))
    const user = await trx.selectFrom('user').select(['username', 'email']).where('id', '=', userId).executeTakeFirst()
    if (!user) throw new AppError('ProfileNotFound', `no profile with id ${userId}`)
    const media = await trx.selectFrom('media').select('storage_key').where('owner_id', '=', userId).execute()
    const uploads = await trx.selectFrom('media_upload').select('id').where('owner_id', '=', userId).execute()
    // Every address the account had a link for (a change asked for included), and its own.
    const links = await trx.selectFrom('email_verification').select('email').where('user_id', '=', userId).execute()
    const asked = links.map(l => l.email.toLowerCase()).filter(a => a !== user.email)
    // An address asked for but never confirmed may be another account's since: its mail is theirs.
    const others = asked.length === 0 ? [] : await trx.selectFrom('user').select('email').where('email', 'in', asked).execute()
    const addresses = [...new Set([user.email, ...asked.filter(a => !others.some(o => o.email === a))])]
    await trx.deleteFrom('outbox_message').where('to_address', 'in', addresses).execute()
    // Others' class lists that name the person by address keep the student, without the address.
    await trx.updateTable('student').set({ email: null })
      .where(eb => eb(eb.fn('lower', ['email']), 'in', addresses)).where('email', 'is not', null).execute()
    await anonymiseMentions(trx, user.username)
    await trx.deleteFrom('idempotency_key')
      .where(eb => eb.or([eb('user_id', '=', userId), eb('location', '=', `/v1/profiles/${userId}`)])).execute()
    await trx.deleteFrom('user').where('id', '=', userId).execute()
    return [...media.map(m => m.storage_key), ...uploads.map(u => u.id)]
  })
  for (const key of keys) await storage.remove(key)
}

/**
 * Others' alerts (and their mails) about a review or comment begin with its author's username
 * (src/domain/alerts.ts): the departed author becomes FORMER_MEMBER there.
 */
async function anonymiseMentions (trx: Executor, username: string): Promise<void> {
  const prefix = `${username} left a `
  // A username holds no `%`; its `_` matches any one character, so LIKE finds a few more rows than startsWith keeps.
  const like = `${prefix}%`
  const alerts = await trx.selectFrom('alert').select(['id', 'message']).where('message', 'like', like).execute()
  for (const alert of alerts.filter(a => a.message.startsWith(prefix))) {
    await trx.updateTable('alert').set({ message: `${FORMER_MEMBER}${alert.message.slice(username.length)}` })
      .where('id', '=', alert.id).execute()
  }
  const mails = await trx.selectFrom('outbox_message').select(['id', 'body']).where('body', 'like', like).execute()
  for (const mail of mails.filter(m => m.body.startsWith(prefix))) {
    await trx.updateTable('outbox_message').set({ body: `${FORMER_MEMBER}${mail.body.slice(username.length)}` })
      .where('id', '=', mail.id).execute()
  }
}
