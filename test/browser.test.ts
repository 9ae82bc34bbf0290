import { existsSync, mkdirSync, mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { FastifyInstance } from 'fastify'
import t, { type Test } from 'tap'
import { build } from './helper.js'
import { newMail, linkIn, signIn, signUpVerified, tokenStatus } from './account-fixtures.js'
import { RESET_SUBJECT } from '../src/domain/password-reset.js'

/**
 * The pages a person opens, in a real browser: headless Chromium (Debian's `chromium` package)
 * driven by playwright-core. Each page renders, its form works with JavaScript on and off, the
 * content security policy blocks nothing it needs (no violation in the console), and a screenshot
 * of each is written to BROWSER_SCREENSHOTS (else a temporary folder, named in the output).
 */

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium'
const NEW_PASSWORD = 'a much longer new passphrase'
const HANG = 120_000

/** The little of playwright-core this file uses, so it type-checks whether or not the package is installed. */
interface ConsoleMessage {
  type: () => string
  text: () => string
}
interface Page {
  goto: (url: string) => Promise<{ status: () => number } | null>
  on: (event: 'console' | 'pageerror', listener: (arg: any) => void) => void
  fill: (selector: string, value: string) => Promise<void>
  click: (selector: string) => Promise<void>
  waitForURL: (url: string | RegExp) => Promise<void>
  waitForSelector: (selector: string) => Promise<unknown>
  waitForLoadState: (state: 'load' | 'networkidle') => Promise<void>
  textContent: (selector: string) => Promise<string | null>
  url: () => string
  screenshot: (opts: { path: string; fullPage?: boolean }) => Promise<unknown>
}
interface Context {
  newPage: () => Promise<Page>
  setDefaultTimeout: (ms: number) => void
  close: () => Promise<void>
}
interface Browser {
  newContext: (opts: { javaScriptEnabled: boolean }) => Promise<Context>
  close: () => Promise<void>
}
interface Chromium {
  launch: (opts: { executablePath: string; headless: boolean; args?: string[] }) => Promise<Browser>
}

async function launch (t: Test): Promise<Browser> {
  if (!existsSync(CHROMIUM)) {
    throw new Error(
      `Chromium is missing at ${CHROMIUM}: install it with \`apt-get install chromium\` (Debian), ` + 'or set CHROMIUM_PATH to a Chromium binary'
    )
  }
  let chromium: Chromium
  try {
    const name = 'playwright-core'
    chromium = ((await import(name)) as { chromium: Chromium }).chromium
  } catch (err) {
    throw new Error(`playwright-core is not installed: \`npm install -D playwright-core\` (${(err as Error).message})`)
  }
  // --no-sandbox: CI runs as root, where Chromium's sandbox cannot start; no background traffic
  // either: the machine has no network past loopback, and Chromium would try its own hosts.
  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync'
    ]
  })
  t.teardown(() => browser.close())
  return browser
}

const shots = process.env.BROWSER_SCREENSHOTS ?? mkdtempSync(join(tmpdir(), 'roja-screenshots-'))
mkdirSync(shots, { recursive: true })
t.comment(`screenshots: ${shots}`)

/** A page whose console is watched: CSP violations, errors and uncaught exceptions are collected. */
async function watchedPage (t: Test, browser: Browser, javaScriptEnabled: boolean): Promise<{ page: Page; problems: string[] }> {
  const context = await browser.newContext({ javaScriptEnabled })
  // A wait here detects a hang, it times nothing: with CI's other work beside it, Chromium has had
  // more than Playwright's default 30 s to lay out /docs. tap's own per-file timeout stays the bound.
  context.setDefaultTimeout(HANG)
  t.teardown(() => context.close())
  const page = await context.newPage()
  const problems: string[] = []
  page.on('console', (message: ConsoleMessage) => {
    const text = message.text()
    // the browser's own favicon request is no part of the page
    if (/favicon/i.test(text)) return
    if (message.type() === 'error' || /Content Security Policy|Refused to/i.test(text)) problems.push(`${message.type()}: ${text}`)
  })
  page.on('pageerror', (err: Error) => problems.push(`uncaught: ${err.message}`))
  return { page, problems }
}

async function listening (t: Test, env: Record<string, string> = {}): Promise<{ app: FastifyInstance; origin: string }> {
  const app = await build(t, { env })
  await app.listen({ port: 0, host: '127.0.0.1' })
  const address = app.server.address() as { port: number }
  return { app, origin: `http://127.0.0.1:${address.port}` }
}

/** The mailed link, pointed at the port this app listens on. */
const onServer = (origin: string, link: URL) => `${origin}${link.pathname}${link.search}`

t.test('the verification page, with JavaScript on and off', async t => {
  const browser = await launch(t)
  const { app, origin } = await listening(t)
  for (const js of [true, false]) {
    const username = js ? 'ada' : 'grace'
    const person = await signUpVerified(app, username, { verify: false })
    const [mail] = person.mails
    const { page, problems } = await watchedPage(t, browser, js)
    const opened = await page.goto(onServer(origin, linkIn(mail)))
    t.equal(opened?.status(), 200, `JavaScript ${js ? 'on' : 'off'}: the page opens`)
    t.match(await page.textContent('h1'), /Confirm your e-mail address/)
    await page.screenshot({ path: join(shots, `verify-email-form-js-${js ? 'on' : 'off'}.png`), fullPage: true })
    await page.click('button[type=submit]')
    await page.waitForURL(/\/verify-email$/)
    t.match(await page.textContent('h1'), /Your e-mail address is confirmed/, 'the form posted and the address is verified')
    await page.screenshot({ path: join(shots, `verify-email-done-js-${js ? 'on' : 'off'}.png`), fullPage: true })
    const me = await app.inject({ method: 'GET', url: '/v1/profiles/me', headers: person.headers })
    t.equal(JSON.parse(me.body).email_verified, true)
    t.same(problems, [], 'no CSP violation or error in the console')
  }
})

t.test('the password-reset page, with JavaScript on and off', async t => {
  const browser = await launch(t)
  const { app, origin } = await listening(t)
  for (const js of [true, false]) {
    const username = js ? 'ada' : 'grace'
    const person = await signUpVerified(app, username)
    await app.inject({ method: 'POST', url: '/v1/password-resets', payload: { username } })
    const mail = (await newMail(app)).find(m => m.subject === RESET_SUBJECT && m.to === person.email)!
    const { page, problems } = await watchedPage(t, browser, js)
    const opened = await page.goto(onServer(origin, linkIn(mail)))
    t.equal(opened?.status(), 200, `JavaScript ${js ? 'on' : 'off'}: the page opens`)
    t.match(await page.textContent('h1'), /Choose a new password/)
    await page.fill('#new_password', NEW_PASSWORD)
    await page.fill('#new_password_again', NEW_PASSWORD)
    await page.screenshot({ path: join(shots, `reset-password-form-js-${js ? 'on' : 'off'}.png`), fullPage: true })
    await page.click('button[type=submit]')
    await page.waitForURL(/\/reset-password$/)
    t.match(await page.textContent('h1'), /Your new password is set/)
    await page.screenshot({ path: join(shots, `reset-password-done-js-${js ? 'on' : 'off'}.png`), fullPage: true })
    t.equal(await tokenStatus(app, person.headers), 401, 'the old token ended')
    t.ok(await signIn(app, username, NEW_PASSWORD), 'the new password signs in')
    t.same(problems, [], 'no CSP violation or error in the console')
  }
})

t.test('the interactive docs at /docs render their operations', async t => {
  const browser = await launch(t)
  // /docs is served in local and staging only
  const { origin } = await listening(t, { ENVIRONMENT: 'local' })
  const { page, problems } = await watchedPage(t, browser, true)
  const opened = await page.goto(`${origin}/docs`)
  t.equal(opened?.status(), 200)
  await page.waitForSelector('.opblock')
  await page.waitForLoadState('networkidle')
  t.match(await page.textContent('body'), /changeMyPassword|\/v1\/profiles\/me\/password/, 'the account routes are listed')
  await page.screenshot({ path: join(shots, 'docs.png'), fullPage: false })
  t.same(problems, [], 'no CSP violation or error in the console')
})
