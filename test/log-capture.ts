import { appendFileSync, mkdirSync } from 'node:fs'
import { join, relative, resolve } from 'node:path'
import type { FastifyInstance } from 'fastify'
import { pino, type DestinationStream } from 'pino'

/**
 * The suite-wide log scan (scripts/test.sh sets ROJA_TEST_LOG_DIR): every app the tests start
 * writes its real log lines to a file there, and every secret it issues is recorded beside them,
 * seen in what it sends; scripts/scan-test-logs.ts then searches all the logs for all the secrets.
 * Unset, nothing is written and test apps stay silent.
 */
export const LOG_DIR = process.env.ROJA_TEST_LOG_DIR || undefined
/** trace: the most a test app can log, so a secret at any level is seen */
export const LOG_LEVEL = process.env.ROJA_TEST_LOG_LEVEL ?? 'trace'

export const TEST_SECRET = 'test-secret-that-is-at-least-32-bytes-long!!'

/**
 * Each kind of secret the app issues and how to find it in a response body or a queued e-mail:
 * one line a kind (group 1 is the secret).
 */
export const ISSUED: ReadonlyArray<{ kind: string, pattern: RegExp }> = [
  { kind: 'access_token', pattern: /"access_token"\s*:\s*"([^"]+)"/g },
  // the links mailed with a 16-byte random token: <EMAIL_VERIFY_URL>?token=… (verification, a new
  // address) and <PASSWORD_RESET_URL>?token=… (password reset)
  { kind: 'mailed link token (e-mail verification, password reset)', pattern: /[?&]token=([A-Za-z0-9_-]{22})(?![A-Za-z0-9_.-])/g }
]

const ROOT = resolve(import.meta.dirname, '..')
// One name per test process (tap runs each file in its own), so parallel files never share a file.
const NAME = `${relative(ROOT, process.argv[1] ?? 'node').replace(/[^\w.-]+/g, '_')}-${process.pid}`

let destination: DestinationStream | undefined
/** This process's log file, shared by all its apps; pino flushes it when the process exits. */
export function logFile (): DestinationStream {
  if (!LOG_DIR) throw new Error('ROJA_TEST_LOG_DIR is not set')
  destination ??= pino.destination({ dest: join(LOG_DIR, `${NAME}.log`), sync: false, mkdir: true })
  return destination
}

/** Keeps the output of a server the test started as a process (npm start, src/server.ts). */
export function keepLog (label: string, text: string): void {
  if (!LOG_DIR) return
  mkdirSync(LOG_DIR, { recursive: true })
  appendFileSync(join(LOG_DIR, `${NAME}.${label}.log`), text)
}

const recorded = new Set<string>()
/** Records one secret (each once per process). */
export function recordSecret (kind: string, value: string): void {
  if (!LOG_DIR || !value || recorded.has(value)) return
  recorded.add(value)
  mkdirSync(LOG_DIR, { recursive: true })
  appendFileSync(join(LOG_DIR, `${NAME}.secrets.jsonl`), `${JSON.stringify({ kind, value })}\n`)
}

/** Records every secret of every ISSUED kind that `text` holds. */
export function recordIssued (text: string): void {
  for (const { kind, pattern } of ISSUED) {
    for (const match of text.matchAll(pattern)) recordSecret(kind, match[1])
  }
}

const JWT = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*$/

/**
 * Watches what the app gives out and takes in, without changing it: every response body as sent;
 * every token it signs, also those a fixture asks for directly; every JWT presented to it as a
 * bearer credential, forged ones included; and at close every e-mail it queued (the outbox table),
 * delivered or not. Call before the app's plugins are registered.
 */
export function observeIssued (server: FastifyInstance): void {
  if (!LOG_DIR) return
  server.addHook('onRequest', (request, _reply, done) => {
    const credential = /^bearer +(\S+)/i.exec(request.headers.authorization ?? '')?.[1]
    if (credential && credential.length >= 32 && JWT.test(credential)) recordSecret('bearer credential', credential)
    done()
  })
  server.addHook('onSend', (_request, _reply, payload, done) => {
    if (typeof payload === 'string') recordIssued(payload)
    else if (Buffer.isBuffer(payload)) recordIssued(payload.toString('utf8'))
    done(null, payload)
  })
  server.addHook('onReady', (done) => {
    if (server.hasDecorator('issueToken')) {
      const issue = server.issueToken
      server.issueToken = (user) => {
        const issued = issue(user)
        recordSecret('access_token', issued.access_token)
        return issued
      }
    }
    done()
  })
  server.addHook('preClose', async () => {
    if (!server.hasDecorator('db')) return
    try {
      const mails = await server.db.selectFrom('outbox_message').select(['subject', 'body']).execute()
      for (const mail of mails) recordIssued(`${mail.subject}\n${mail.body}`)
    } catch {} // a test that took the database away has no outbox to read
  })
}
