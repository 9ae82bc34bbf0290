import type { AddressInfo } from 'node:net'
import { SMTPServer } from 'smtp-server'
import type { Test } from 'tap'

/** Test helpers for e-mail: a real SMTP server on loopback. */

export interface ReceivedMail {
  to: string[]
  raw: string
  subject: string
  messageId: string
}

export interface TestSmtp {
  url: string
  received: ReceivedMail[]
  /** refuse the next n messages with a 451 (temporary failure) */
  refuse: (n: number) => void
  /** resolves once `count` messages have been accepted */
  waitFor: (count: number) => Promise<void>
}

/** An SMTP server on 127.0.0.1, port 0, closed at teardown; each message is accepted `delayMs` after it arrives. */
export async function smtpServer (t: Test, { delayMs = 0 } = {}): Promise<TestSmtp> {
  const received: ReceivedMail[] = []
  const waiters: Array<{ count: number, resolve: () => void }> = []
  let refusals = 0
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS', 'AUTH'],
    logger: false,
    onData (stream, session, callback) {
      const chunks: Buffer[] = []
      stream.on('data', (c: Buffer) => chunks.push(c))
      const accept = () => {
        if (refusals > 0) {
          refusals--
          return callback(Object.assign(new Error('mailbox busy, try later'), { responseCode: 451 }))
        }
        const raw = Buffer.concat(chunks).toString('utf8')
        received.push({
          to: session.envelope.rcptTo.map(r => r.address),
          raw,
          subject: decodeHeader(/^Subject: (.*(?:\r\n[ \t].*)*)$/m.exec(raw)?.[1] ?? ''),
          messageId: /^Message-ID: (.*)$/mi.exec(raw)?.[1].trim() ?? ''
        })
        for (const w of waiters.filter(w => received.length >= w.count)) w.resolve()
        callback()
      }
      stream.on('end', () => { if (delayMs > 0) setTimeout(accept, delayMs); else accept() })
    }
  })
  await new Promise<void>(resolve => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.server.address() as AddressInfo
  t.teardown(() => new Promise<void>(resolve => server.close(() => resolve())))
  return {
    url: `smtp://127.0.0.1:${port}`,
    received,
    refuse: (n) => { refusals = n },
    waitFor: (count) => received.length >= count
      ? Promise.resolve()
      : new Promise(resolve => { waiters.push({ count, resolve }) })
  }
}

/** Decodes RFC 2047 encoded words (nodemailer Q- or B-encodes subjects with quotes or non-ASCII). */
function decodeHeader (value: string): string {
  return value.replace(/\r\n[ \t]/g, ' ').replace(/=\?UTF-8\?([QB])\?([^?]*)\?=\s*/gi, (_m, enc: string, text: string) =>
    enc.toUpperCase() === 'B'
      ? Buffer.from(text, 'base64').toString('utf8')
      : Buffer.from(text.replace(/_/g, ' ').replace(/=([0-9A-F]{2})/gi, (_h, hex: string) => String.fromCharCode(parseInt(hex, 16))), 'latin1').toString('utf8'))
}
