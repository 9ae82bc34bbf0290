import { mkdir, rename, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import type { FastifyBaseLogger } from 'fastify'
import fp from 'fastify-plugin'
import type { Transporter } from 'nodemailer'
import type { Counter } from 'prom-client'
import promClient from 'prom-client'
import type { AppDb } from './db.js'

/** What the worker reads of a queued message. */
export interface QueuedEmail {
  id: string
  to_address: string
  subject: string
  body: string
  /** attempts begun, this one included */
  attempts: number
}

/**
 * Filled in by the app with its queue's message type, as @fastify/jwt's FastifyJWT is:
 * `declare module '../plugins/outbox.js' { interface OutboxTypes { message: OutboxMessage } }`.
 */
export interface OutboxTypes {}

/** A message as the queue hands it over and takes it back: the app's type, else what the worker reads. */
export type QueuedMessage = OutboxTypes extends { message: infer M extends QueuedEmail } ? M : QueuedEmail

/** The queue the app keeps in its database: functions that take the database first. */
export interface OutboxQueue {
  /** leases up to `limit` due messages to this worker and counts an attempt on each */
  claimDue: (db: AppDb, opts: { now: Date; leaseMs: number; limit: number; maxAttempts: number }) => Promise<QueuedMessage[]>
  markSent: (db: AppDb, message: QueuedMessage) => Promise<void>
  /** records a failed attempt; without `nextAttemptAt` the message stays failed */
  markFailed: (db: AppDb, id: string, error: string, nextAttemptAt: Date | undefined) => Promise<void>
  /** the undelivered messages, for the gauges */
  backlog: (db: AppDb, maxAttempts: number) => Promise<{ pending: number; dead: number; oldestQueuedAt?: Date }>
}

/** The worker's settings, the app's and the tests' to choose. */
export interface OutboxSettings {
  /** run the background loop once the server listens (default true); tests call runOnce instead */
  loop?: boolean
  /** pause between polls when nothing was due (ms) */
  intervalMs?: number
  /** messages claimed per round */
  batchSize?: number
  /** how long a claim holds before another worker may take the message (ms) */
  leaseMs?: number
  /** attempts before a message stays failed */
  maxAttempts?: number
  /** first retry delay (ms); doubles each attempt up to backoffMaxMs */
  backoffBaseMs?: number
  backoffMaxMs?: number
}

export interface OutboxOptions extends OutboxSettings {
  queue: OutboxQueue
  /** the wait before the next try after `attempts` of them, from backoffBaseMs and backoffMaxMs */
  backoffMs: (attempts: number, baseMs: number, maxMs: number) => number
  /** the clock messages are queued by (ms), so what is due is judged on it; default Date.now */
  clockMs?: () => number
}

export interface OutboxRunResult {
  claimed: number
  sent: number
  failed: number
}

export interface OutboxWorker {
  /** claims the due messages and delivers them once; `now` lets tests move the clock */
  runOnce: (opts?: { now?: Date }) => Promise<OutboxRunResult>
  /** where `.eml` files go when SMTP_URL is unset */
  mailDir: string
}

declare module 'fastify' {
  interface FastifyInstance {
    outbox: OutboxWorker
  }
}

const DEFAULTS = {
  loop: true,
  intervalMs: 1000,
  batchSize: 20,
  leaseMs: 120_000,
  maxAttempts: 8,
  backoffBaseMs: 30_000,
  backoffMaxMs: 6 * 3600_000
}

/**
 * The e-mail outbox worker: delivers what domain code queued with enqueueEmail,
 * over SMTP (SMTP_URL) or as `.eml` files under DATA_DIR/mail. At least once: a message is
 * marked sent only after delivery, and a claim is a lease that runs out if the process dies.
 */
export default fp<OutboxOptions>(
  async (fastify, opts) => {
    const { queue, backoffMs, clockMs = Date.now, ...settings } = opts
    const o = { ...DEFAULTS, ...settings }
    const { config, db, log } = fastify
    const mailDir = join(config.dataDir, 'mail')

    // Timeouts stay well inside the lease, so a slow server cannot outlive our claim.
    const smtpTimeout = Math.max(1000, Math.floor(o.leaseMs / 4))
    // nodemailer is loaded on the first delivery: an instance that sends nothing never pays its memory.
    let transport: Transporter | undefined
    let files: Transporter | undefined
    const transports = async () => {
      if (!files) {
        const { default: nodemailer } = await import('nodemailer')
        transport = config.SMTP_URL
          ? nodemailer.createTransport({
            url: config.SMTP_URL,
            connectionTimeout: smtpTimeout,
            greetingTimeout: smtpTimeout,
            socketTimeout: smtpTimeout
          })
          : undefined
        files = nodemailer.createTransport({ streamTransport: true, buffer: true })
      }
      return { transport, files }
    }

    const counters = fastify.hasDecorator('metricsRegistry') ? makeCounters(fastify.metricsRegistry) : undefined
    // With tracing on, each delivery is a span (its queries are children); off, the plain call.
    const traced = fastify.hasDecorator('traced') ? fastify.traced : async <T>(_name: string, _attributes: object, fn: () => Promise<T>) => await fn()
    if (fastify.hasDecorator('metricsRegistry')) backlogGauges(fastify.metricsRegistry, () => queue.backlog(db, o.maxAttempts), clockMs, log)

    async function deliver (message: QueuedMessage): Promise<void> {
      const mail = {
        from: config.MAIL_FROM,
        to: message.to_address,
        subject: message.subject,
        text: message.body,
        // A stable Message-ID lets receivers drop the duplicate of an at-least-once redelivery.
        messageId: `<${message.id}@roja.outbox>`
      }
      const { transport, files } = await transports()
      if (transport) {
        await transport.sendMail(mail)
        return
      }
      const info = await files!.sendMail(mail)
      await mkdir(mailDir, { recursive: true })
      // Named by message id: a redelivery overwrites the same file. Rename makes it appear whole.
      const target = join(mailDir, `${message.id}.eml`)
      const temp = `${target}.${process.pid}.tmp`
      await writeFile(temp, info.message as Buffer)
      await rename(temp, target)
    }

    async function runOnce ({ now = new Date(clockMs()) }: { now?: Date } = {}): Promise<OutboxRunResult> {
      const claimed = await queue.claimDue(db, { now, leaseMs: o.leaseMs, limit: o.batchSize, maxAttempts: o.maxAttempts })
      const result = { claimed: claimed.length, sent: 0, failed: 0 }
      for (const message of claimed) {
        await traced(
          'outbox deliver',
          { 'messaging.system': 'roja.outbox', 'messaging.message.id': message.id, 'roja.outbox.attempt': message.attempts },
          async () => {
            try {
              await deliver(message)
            } catch (err) {
              const final = message.attempts >= o.maxAttempts
              const retryAt = final ? undefined : new Date(now.getTime() + backoffMs(message.attempts, o.backoffBaseMs, o.backoffMaxMs))
              await queue.markFailed(db, message.id, (err as Error).message, retryAt)
              result.failed++
              counters?.failed.inc({ final: String(final) })
              log[final ? 'error' : 'warn'](
                { outboxId: message.id, attempts: message.attempts, retryAt, err },
                final ? 'e-mail failed for good' : 'e-mail failed, will retry'
              )
              return err as Error // marks the span failed
            }
            await queue.markSent(db, message)
            result.sent++
            counters?.sent.inc()
          }
        )
      }
      return result
    }

    fastify.decorate('outbox', { runOnce, mailDir })

    let timer: NodeJS.Timeout | undefined
    let running: Promise<unknown> | undefined
    let stopped = false

    function schedule (delay: number) {
      if (stopped) return
      timer = setTimeout(() => {
        running = runOnce()
          .then(r => r.claimed)
          .catch(err => {
            log.error({ err }, 'outbox round failed')
            return 0
          })
          .then(claimed => schedule(claimed >= o.batchSize ? 0 : o.intervalMs))
      }, delay)
      timer.unref()
    }

    // Only a listening server delivers in the background: an app that is merely built (tests, CLI) does not.
    if (o.loop) {
      fastify.addHook('onListen', async () => {
        schedule(0)
      })
    }

    fastify.addHook('onClose', async () => {
      stopped = true
      clearTimeout(timer)
      await running // let the round in flight finish before the database closes
      transport?.close()
    })
  },
  { name: 'outbox', dependencies: ['config', 'db'] }
)

function makeCounters (registry: promClient.Registry): { sent: Counter; failed: Counter<'final'> } {
  return {
    sent: new promClient.Counter({ name: 'roja_outbox_sent_total', help: 'e-mails delivered by the outbox worker', registers: [registry] }),
    failed: new promClient.Counter({
      name: 'roja_outbox_failed_total',
      help: 'failed e-mail delivery attempts; ' + 'final="true" when no retry is left',
      labelNames: ['final'],
      registers: [registry]
    })
  }
}

type Backlog = Awaited<ReturnType<OutboxQueue['backlog']>>

/** Queue depth and the oldest message's age, read with one query when Prometheus scrapes (never per request). */
function backlogGauges (registry: promClient.Registry, read: () => Promise<Backlog>, clockMs: () => number, log: FastifyBaseLogger): void {
  let backlog: Promise<Backlog | undefined> | undefined
  // A scrape starts every collect() in the same tick, so the three gauges share the read in flight.
  const current = () => {
    backlog ??= read()
      .catch(err => {
        log.warn({ err }, 'outbox backlog unreadable for metrics')
        return undefined
      })
      .finally(() => {
        backlog = undefined
      })
    return backlog
  }
  const gauge = (name: string, help: string, value: (b: Backlog) => number) =>
    new promClient.Gauge({
      name,
      help,
      registers: [registry],
      async collect () {
        const b = await current()
        // Unreadable (database down): NaN, never a stale number or a reassuring 0.
        this.set(b ? value(b) : NaN)
      }
    })
  gauge('roja_outbox_pending_messages', 'e-mails queued and not yet delivered that will still be tried', b => b.pending)
  gauge('roja_outbox_oldest_pending_age_seconds', 'age of the oldest undelivered e-mail that will still be tried (0 when none)', b =>
    b.oldestQueuedAt ? Math.max(0, (clockMs() - b.oldestQueuedAt.getTime()) / 1000) : 0
  )
  gauge('roja_outbox_dead_messages', 'e-mails that used all their attempts and will not be tried again', b => b.dead)
}
