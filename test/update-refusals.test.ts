import type { InjectOptions } from 'fastify'
import t from 'tap'
import { build, dialect, json, recordStatements } from './helper.js'
import { createCreator, createUser } from './fixtures.js'
import { createPost, MISSING } from './post-fixtures.js'
import { PATCH, refusedWritingNothing, state } from './update-checks.js'
import { revokeCreator } from '../src/domain/users.js'

/**
 * Updates read the row, check it and write it only where the row is still as read: every refusal
 * answers its problem and writes nothing, and concurrent merge patches of different fields each
 * land on the row the others left. Twins with one If-Match: test/conditional-writes.test.ts.
 */

t.test('a post update refused for any reason writes nothing', async t => {
  const app = await build(t)
  const owner = await createCreator(app)
  const other = await createCreator(app)
  const post = await createPost(app, owner, { tags: ['keep', 'these'] })
  const draft = await createPost(app, owner, { published_at: null })
  await createPost(app, owner, { slug: 'taken' })
  const url = `/v1/posts/${post.id}`
  const put = { type: 'ARTICLE', title: 'Changed', tags: ['new'] }
  const stale = { ...owner.headers, 'if-match': '"stale"' }
  const cases: Array<[string, InjectOptions, [number, string]]> = [
    ['PUT by another creator', { method: 'PUT', headers: other.headers, payload: put }, [403, 'UserNotOwner']],
    ['PATCH by another creator', { method: 'PATCH', headers: { ...other.headers, ...PATCH }, payload: { title: 'x' } }, [403, 'UserNotOwner']],
    ['PUT with a stale If-Match', { method: 'PUT', headers: stale, payload: put }, [412, 'PreconditionFailed']],
    ['PATCH with a stale If-Match', { method: 'PATCH', headers: { ...stale, ...PATCH }, payload: { title: 'x' } }, [412, 'PreconditionFailed']],
    ['PUT of a taken slug', { method: 'PUT', headers: owner.headers, payload: { ...put, slug: 'taken' } }, [409, 'Conflict']],
    ['PATCH of a taken slug', { method: 'PATCH', headers: { ...owner.headers, ...PATCH }, payload: { slug: 'taken' } }, [409, 'Conflict']],
    ['PATCH clearing the title', { method: 'PATCH', headers: { ...owner.headers, ...PATCH }, payload: { title: null } }, [422, 'ValidationFailed']]
  ]
  for (const [name, request, expected] of cases) await refusedWritingNothing(t, app, url, owner, request, expected, name)

  const draftUrl = `/v1/posts/${draft.id}`
  await refusedWritingNothing(t, app, draftUrl, owner, { method: 'PUT', headers: other.headers, payload: put }, [404, 'PostNotFound'], "another's draft")
  const missing = await app.inject({ method: 'PUT', url: `/v1/posts/${MISSING}`, headers: owner.headers, payload: put })
  t.same([missing.statusCode, json(missing).code], [404, 'PostNotFound'], 'a missing post: 404')

  // a stored value no rule allows any more: the merged post breaks the PUT rules (422) and nothing is written
  await app.db.updateTable('post').set({ media_url: 'ftp://nowhere/x' }).where('id', '=', post.id).execute()
  await refusedWritingNothing(t, app, url, owner, { method: 'PATCH', headers: { ...owner.headers, ...PATCH }, payload: { title: 'x' } },
    [422, 'ValidationFailed'], 'a merge that breaks a rule')
  await app.db.updateTable('post').set({ media_url: null }).where('id', '=', post.id).execute()

  await revokeCreator(app.db, owner.username)
  await refusedWritingNothing(t, app, url, owner, { method: 'PUT', headers: owner.headers, payload: put }, [403, 'UserNotCreator'], 'a revoked creator')
})

t.test('a comment or profile update refused for any reason writes nothing', async t => {
  const app = await build(t)
  const owner = await createCreator(app)
  const other = await createUser(app)
  const post = await createPost(app, owner)
  const comment = json(await app.inject({ method: 'POST', url: `/v1/posts/${post.id}/comments`, headers: owner.headers, payload: { text: 'first' } }))
  const url = `/v1/posts/${post.id}/comments/${comment.id}`
  const stale = { ...owner.headers, 'if-match': '"stale"' }
  const cases: Array<[string, InjectOptions, [number, string]]> = [
    ['PUT by another user', { method: 'PUT', headers: other.headers, payload: { text: 'x' } }, [403, 'UserNotOwner']],
    ['PATCH by another user', { method: 'PATCH', headers: { ...other.headers, ...PATCH }, payload: { text: 'x' } }, [403, 'UserNotOwner']],
    ['PUT with a stale If-Match', { method: 'PUT', headers: stale, payload: { text: 'x' } }, [412, 'PreconditionFailed']],
    ['PATCH with a stale If-Match', { method: 'PATCH', headers: { ...stale, ...PATCH }, payload: { text: 'x' } }, [412, 'PreconditionFailed']],
    ['PATCH clearing the text', { method: 'PATCH', headers: { ...owner.headers, ...PATCH }, payload: { text: null } }, [422, 'ValidationFailed']]
  ]
  for (const [name, request, expected] of cases) await refusedWritingNothing(t, app, url, owner, request, expected, `comment: ${name}`)
  const elsewhere = await createPost(app, owner)
  const movedUrl = `/v1/posts/${elsewhere.id}/comments/${comment.id}`
  const moved = await app.inject({ method: 'PUT', url: movedUrl, headers: owner.headers, payload: { text: 'x' } })
  t.same([moved.statusCode, json(moved).code], [404, 'ResourceNotFound'], 'the comment under another post: 404')
  t.equal((await state(app, url, owner)).body.text, 'first', 'and it is unchanged')
  const draft = await createPost(app, owner, { published_at: null })
  const onDraft = json(await app.inject({ method: 'POST', url: `/v1/posts/${draft.id}/comments`, headers: owner.headers, payload: { text: 'mine' } }))
  const draftUrl = `/v1/posts/${draft.id}/comments/${onDraft.id}`
  await refusedWritingNothing(t, app, draftUrl, owner, { method: 'PUT', headers: other.headers, payload: { text: 'x' } },
    [404, 'PostNotFound'], "comment: on another's draft")
  const missing = await app.inject({ method: 'PUT', url: `/v1/posts/${draft.id}/comments/${MISSING}`, headers: other.headers, payload: { text: 'x' } })
  t.same([missing.statusCode, json(missing).code], [404, 'PostNotFound'], "a missing comment on another's draft: the post's 404 first")

  const me = '/v1/profiles/me'
  await refusedWritingNothing(t, app, me, owner, { method: 'PUT', headers: stale, payload: { first_name: 'X' } },
    [412, 'PreconditionFailed'], 'profile: stale PUT')
  await refusedWritingNothing(t, app, me, owner, { method: 'PATCH', headers: { ...stale, ...PATCH }, payload: { first_name: 'X' } },
    [412, 'PreconditionFailed'], 'profile: stale PATCH')
  await refusedWritingNothing(t, app, me, owner, { method: 'PATCH', headers: { ...owner.headers, ...PATCH }, payload: { first_name: null } },
    [422, 'ValidationFailed'], 'profile: PATCH clearing first_name')
})

t.test('concurrent merge patches of different fields, without If-Match, all land', async t => {
  const app = await build(t)
  const owner = await createCreator(app)
  for (let round = 1; round <= 4; round++) {
    const post = await createPost(app, owner, { tags: ['old'] })
    const url = `/v1/posts/${post.id}`
    const patches = [{ title: `Title ${round}` }, { body: 'a body' }, { tags: ['a', 'b'] }, { slug: `slug-${round}` }, { media_url: null }]
    const answers = await Promise.all(patches.map(payload => app.inject({ method: 'PATCH', url, headers: { ...owner.headers, ...PATCH }, payload })))
    t.same(answers.map(a => a.statusCode), patches.map(() => 200), `round ${round}: every PATCH 200`)
    const now = await state(app, url, owner)
    t.match(now.body, { title: `Title ${round}`, body: 'a body', tags: ['a', 'b'], slug: `slug-${round}` }, `round ${round}: every field changed`)
    t.same(now.tags, ['a', 'b'], `round ${round}: the tag rows follow`)

    const fields = [{ first_name: `F${round}` }, { last_name: `L${round}` }, { age: 30 + round }, { favorite_band: null }, { website: null }]
    const me = { method: 'PATCH', url: '/v1/profiles/me', headers: { ...owner.headers, ...PATCH } } as const
    const profile = await Promise.all(fields.map(payload => app.inject({ ...me, payload })))
    t.same(profile.map(a => a.statusCode), fields.map(() => 200), `round ${round}: every profile PATCH 200`)
    t.match((await state(app, '/v1/profiles/me', owner)).body, { first_name: `F${round}`, last_name: `L${round}`, age: 30 + round })
  }
})

t.test('an update is the account read, the read and one write; PostgreSQL opens no transaction for it', async t => {
  const app = await build(t)
  const owner = await createCreator(app)
  const post = await createPost(app, owner, { tags: ['a'] })
  const comment = json(await app.inject({ method: 'POST', url: `/v1/posts/${post.id}/comments`, headers: owner.headers, payload: { text: 'first' } }))
  const statements = recordStatements(t, app)
  const requests: Array<[string, InjectOptions, number]> = [
    ['PUT post', { method: 'PUT', url: `/v1/posts/${post.id}`, headers: owner.headers, payload: { type: 'ARTICLE', title: 'New', tags: ['b'] } }, 3],
    ['PATCH post', { method: 'PATCH', url: `/v1/posts/${post.id}`, headers: { ...owner.headers, ...PATCH }, payload: { title: 'Newer' } }, 3],
    ['PUT comment', { method: 'PUT', url: `/v1/posts/${post.id}/comments/${comment.id}`, headers: owner.headers, payload: { text: 'x' } }, 3],
    ['PATCH profile', { method: 'PATCH', url: '/v1/profiles/me', headers: { ...owner.headers, ...PATCH }, payload: { first_name: 'Z' } }, 3]
  ]
  for (const [name, request, count] of requests) {
    statements.length = 0
    t.equal((await app.inject(request)).statusCode, 200, name)
    const verbs = statements.map(sql => sql.split(' ')[0].toLowerCase())
    if (dialect === 'postgres') {
      t.same(verbs, [...Array(count - 1).fill('select'), 'with'], `${name}: ${count} statements, the last the write`)
    } else {
      t.same([verbs[1], verbs.at(-1)], ['begin', 'commit'], `${name}: SQLite reads and writes in one transaction`)
    }
  }
})
