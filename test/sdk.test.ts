/**
 * The second generator: the SDK that @hey-api/openapi-ts builds from the committed openapi/v1.json,
 * generated here into a folder of its own (it is not committed), type-checked together with the
 * flow that uses it (client/sdk-flow.ts, no casts) and driven against a listening server.
 */
import { execFile } from 'node:child_process'
import { copyFileSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { promisify } from 'node:util'
import t, { type Test } from 'tap'
import { tsImport } from 'tsx/esm/api'
import { generateSdk } from '../scripts/sdk.js'
import { grantCreator } from '../src/domain/users.js'
import { build } from './helper.js'
import { verifyEmail } from './fixtures.js'
import { ROOT } from '../src/package-info.js'

type SdkFlow = (t: Test, baseUrl: string, makeCreator: (username: string) => Promise<void>) => Promise<void>
const run = promisify(execFile)

// Under client/ (git-ignored there): the flow's imports of tap and Node's types resolve from the repository.
const dir = mkdtempSync(join(ROOT, 'client', '.sdk-test-'))
t.teardown(() => rmSync(dir, { recursive: true, force: true }))

t.test('the SDK generated from openapi/v1.json type-checks with the flow that uses it', async t => {
  generateSdk('v1', join(dir, 'sdk', 'v1'))
  copyFileSync(join(ROOT, 'client', 'sdk-flow.ts'), join(dir, 'sdk-flow.ts'))
  // the repository's compiler options, on these files alone
  writeFileSync(
    join(dir, 'tsconfig.json'),
    JSON.stringify({ extends: join(ROOT, 'tsconfig.json'), compilerOptions: { noEmit: true }, files: ['sdk-flow.ts'], include: [] })
  )
  const tsc = join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc')
  const checked = await run(process.execPath, [tsc, '-p', join(dir, 'tsconfig.json')], { cwd: dir }).then(
    () => '',
    (err: { stdout?: string }) => err.stdout ?? String(err)
  )
  t.equal(checked, '', 'tsc finds no error')
})

t.test('the @hey-api/openapi-ts SDK drives sign-up, tokens, drafts, conditional requests and media against the server', async t => {
  // the generated code talks HTTP; which database answers is not its concern
  const app = await build(t, { database: { url: 'sqlite::memory:' } })
  await app.listen({ host: '127.0.0.1', port: 0 })
  const { port } = app.server.address() as { port: number }
  // loaded from the folder, not imported: the repository's type-check must not reach the generated
  // code. TypeScript, so through tsx whether this file runs through it or transpiled.
  const { sdkFlow } = (await tsImport(pathToFileURL(join(dir, 'sdk-flow.ts')).href, import.meta.url)) as { sdkFlow: SdkFlow }
  await sdkFlow(t, `http://127.0.0.1:${port}`, async username => {
    await grantCreator(app.db, username)
    // The flow uploads too, which needs a verified address: the user opens the link sign-up mailed.
    await verifyEmail(
      app,
      await app.db.selectFrom('user').select(['id', 'username', 'email']).where('username', '=', username).executeTakeFirstOrThrow()
    )
  })
})
