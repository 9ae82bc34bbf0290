import { randomUUID } from 'node:crypto'
import { sql, type Insertable, type QueryCreator, type SelectQueryBuilder, type Updateable } from '../db/kysely.js'
import { AppError } from '../../schemas/problems.js'
import type { CreatorPostListQuery, Post, PostCreate, PostListQuery, PostUpdate } from '../../schemas/posts.js'
import { lockForUpdate } from '../db/row-lock.js'
import { formatDateTime, formatNullableDateTime, parseDateTimeInput, toDate } from '../db/date-time-format.js'
import { writeTimeIso, clockMs } from '../db/clock.js'
import { uniqueViolation, whenParentGone } from '../db/unique-violation.js'
import { compiledList, keysetList } from '../db/paging.js'
import { parseSort } from './list.js'
import { countPublishedPosts } from './post-counter.js'
import type { Executor } from '../db/dialect.js'
import { writeTogether } from '../db/write-together.js'
import { changeRow, rowVersion, sameVersion } from '../db/row-change.js'
import type { Database, PostTable } from '../db/schema.js'
import { enqueueEmail } from './outbox.js'
import { cachedStatement, cachedStatementPerShape, type Values } from '../db/statement-cache.js'
import { verifiedAddress } from './email-verification.js'
import { getCreator } from './users.js'
import { PERSON_COLUMNS, toPerson } from './person.js'
import { bodyOf, type Change } from './merge-patch.js'

/**
 * A check of the post as it is now, before anything changes: the route passes its owner and
 * If-Match checks. A change runs it against the very row it writes (changeRow), a delete inside
 * its transaction, so no other write can slip between.
 */
export type Guard = (current: Post) => void

const SORT_COLUMNS = { created_at: 'post.created_at', updated_at: 'post.updated_at', published_at: 'post.published_at', title: 'post.title' }
// sort_at is the latest of updated_at, published_at, created_at, kept on every write; indexed (post_sort_at_idx).
const DEFAULT_SORT = [{ column: 'post.sort_at', direction: 'desc' as const }]

function selectPosts (db: Executor) {
  return withPerson(db.selectFrom('post'))
}

/** A post's columns and its creator's, from `post` (the table, or a CTE of its rows named so). */
function withPerson<Q extends SelectQueryBuilder<Database & { post: PostTable }, 'post', {}>> (from: Q) {
  return (from as unknown as SelectQueryBuilder<Database, 'post', {}>)
    .innerJoin('user', 'user.id', 'post.creator_id')
    .innerJoin('profile', 'profile.id', 'post.creator_id')
    .select([
      'post.id',
      'post.type',
      'post.slug',
      'post.title',
      'post.body',
      'post.word_count',
      'post.tags',
      'post.media_url',
      'post.published_at',
      'post.created_at',
      'post.updated_at',
      'post.creator_id',
      ...PERSON_COLUMNS
    ])
}

type PostRow = Awaited<ReturnType<ReturnType<typeof selectPosts>['executeTakeFirstOrThrow']>>

/** One post by id: the read behind every post route, compiled once. */
const postById = cachedStatement((db, postId: string) => selectPosts(db).where('post.id', '=', postId))

function toPost (row: PostRow): Post {
  return {
    id: row.id,
    type: row.type,
    slug: row.slug,
    title: row.title,
    body: row.body,
    // null on a post the previous release wrote during a rolling upgrade (2026_11_29_0301)
    word_count: row.word_count ?? wordCount(row.body),
    tags: JSON.parse(row.tags) as string[],
    media_url: row.media_url,
    creator: toPerson(row.creator_id, row),
    published_at: formatNullableDateTime(row.published_at),
    created_at: formatDateTime(row.created_at),
    updated_at: formatDateTime(row.updated_at)
  }
}

/** Words in a post's body: runs of characters between white space. */
export function wordCount (body: string): number {
  return body.split(/\s+/).filter(w => w !== '').length
}

/** Published means published_at has come; drafts (null) and scheduled posts are seen by their creator only. */
export function isVisible (row: { published_at: Date | string | null; creator_id: string }, viewerId: string | undefined): boolean {
  if (viewerId !== undefined && row.creator_id === viewerId) return true
  return row.published_at !== null && toDate(row.published_at).getTime() <= clockMs()
}

/** The post as the viewer may see it; missing and hidden alike are 404, so a draft's existence does not leak. */
async function findVisible (db: Executor, postId: string, viewerId: string | undefined): Promise<PostRow> {
  return visibleOr404((await postById(db, postId))[0], postId, viewerId)
}

function visibleOr404<R extends PostRow> (row: R | undefined, postId: string, viewerId: string | undefined): R {
  if (!row || !isVisible(row, viewerId)) throw postNotFound(postId)
  return row
}

/** isVisible in SQL: the posts the viewer may see at `now` (ISO text). */
export function visibleTo<O> (posts: SelectQueryBuilder<Database, 'post', O>, viewerId: string, now: string): SelectQueryBuilder<Database, 'post', O> {
  return posts.where(eb => eb.or([eb('post.creator_id', '=', viewerId), eb('post.published_at', '<=', now)]))
}

/** The post by id when the viewer may see it at `now`, for a write under it to select from. */
export function selectVisiblePost (db: QueryCreator<Database>, postId: string, viewerId: string, now: string) {
  return visibleTo(db.selectFrom('post').where('post.id', '=', postId), viewerId, now)
}

/** The answer to a post the viewer may not see, or that is not there. */
export function postNotFound (postId: string): AppError {
  return new AppError('PostNotFound', `no post with id ${postId}`)
}

/** A post deleted while a write under it was under way: its foreign key fails, answered as the missing post it now is. */
export async function orPostGone<T> (postId: string, write: Promise<T>): Promise<T> {
  return whenParentGone(write, () => postNotFound(postId))
}

/** For the routes nested under a post: 404 PostNotFound unless the viewer can see it. */
export async function assertPostVisible (db: Executor, postId: string, viewerId: string | undefined): Promise<void> {
  await findVisible(db, postId, viewerId)
}

export async function getPost (db: Executor, postId: string, viewerId: string | undefined): Promise<Post> {
  return toPost(await findVisible(db, postId, viewerId))
}

export interface PostScope {
  /** only this creator's posts */
  creatorId?: string
  /** drafts and scheduled posts too (the creator's own list) */
  unpublished?: boolean
}

/** A page of posts and the total the filters match. The public lists hold published posts only. */
export async function listPosts (
  db: Executor,
  query: PostListQuery | CreatorPostListQuery,
  scope: PostScope = {}
): Promise<{ posts: Post[]; total: number }> {
  const values = filterValues(query, scope, clockMs())
  const sort = parseSort(query.sort, SORT_COLUMNS, DEFAULT_SORT, 'post.id', ['post.published_at'])
  const { rows, total } = await postList.page(db, values, sort, query, counterTotal(db, values))
  return { posts: rows.map(toPost), total }
}

/**
 * The public lists filtered by type at most (the busiest) count from post_counter's slots and
 * the few scheduled posts, never count(*) over every post; other filters return undefined,
 * so the list counts the rows they match.
 */
function counterTotal (db: Executor, values: PostFilterValues): (() => Promise<number>) | undefined {
  if (values.now === undefined || values.creatorId !== undefined || values.tags !== undefined) return undefined
  const { now, type } = values
  return () => countPublishedPosts(db, now, type)
}

/** What a post list filters on; `now` unset: drafts and scheduled posts too (the creator's own list). */
interface PostFilterValues extends Values {
  now?: string
  /** set with `now`: where the public lists start reading post_sort_at_idx (see VISIBLE_SORT_AT_SLACK_MS) */
  visibleUntil?: string
  creatorId?: string
  type?: string
  tags?: string[]
}

type PostFilters = Pick<PostListQuery, 'type' | 'tags' | 'creator_id'>

/**
 * A visible post's sort_at is never ahead of the clock, so the public lists enter post_sort_at_idx
 * at now plus this slack, past the scheduled posts at its head; the day covers other instances'
 * clocks (NTP skew, writeTimeIso running ahead). Why: docs/decisions/0009-deep-pages-by-key.md
 */
export const VISIBLE_SORT_AT_SLACK_MS = 86_400_000

function filterValues (query: PostFilters | CreatorPostListQuery, scope: PostScope, nowMs: number): PostFilterValues {
  const visible = !scope.unpublished
  return {
    now: visible ? new Date(nowMs).toISOString() : undefined,
    visibleUntil: visible ? new Date(nowMs + VISIBLE_SORT_AT_SLACK_MS).toISOString() : undefined,
    creatorId: scope.creatorId ?? ('creator_id' in query ? query.creator_id : undefined),
    type: query.type,
    // every named tag: the posts that have as many of them as were asked for
    tags: query.tags === undefined ? undefined : normaliseTags(query.tags.split(','))
  }
}

/** The filters of every post list (v1 and v2): visibility, creator, type, tags, on the post table alone (KeysFirst). */
function filterPosts<Q extends SelectQueryBuilder<Database, any, any>> (query: Q, v: PostFilterValues): Q {
  let q = query as unknown as PostQuery
  if (v.now !== undefined) q = q.where('post.published_at', '<=', v.now)
  if (v.visibleUntil !== undefined) q = q.where('post.sort_at', '<=', v.visibleUntil)
  if (v.creatorId !== undefined) q = q.where('post.creator_id', '=', v.creatorId)
  if (v.type !== undefined) q = q.where('post.type', '=', v.type as Post['type'])
  const tags = v.tags
  if (tags !== undefined) {
    q = q.where('post.id', 'in', eb =>
      eb
        .selectFrom('post_tag')
        .select('post_tag.post_id')
        .where('post_tag.tag', 'in', tags)
        .groupBy('post_tag.post_id')
        .having(sql<number>`count(*)`, '=', tags.length)
    )
  }
  return q as Q
}
type PostQuery = SelectQueryBuilder<Database, 'post', any>

const postList = compiledList((db, v: PostFilterValues) => filterPosts(selectPosts(db), v), {
  key: 'post.id',
  keys: (db, v) => filterPosts(db.selectFrom('post'), v),
  rows: selectPosts,
  // a creator's own list is small: read directly
  narrow: v => v.creatorId !== undefined
})

/** Where a keyset page ends: the (sort_at, id) of its last post. */
export interface PostPosition {
  sort_at: string
  id: string
}

type Keyset = PostFilterValues & { sortAt?: string; id?: string }

/** The posts (of `query`'s table set) after a position, filtered; the keyset list adds the order and limit. */
function afterPosition<Q extends SelectQueryBuilder<Database, any, any>> (query: Q, v: Keyset): Q {
  const q = filterPosts(query, v) as unknown as PostQuery
  const { sortAt, id } = v
  return (sortAt !== undefined && id !== undefined
    ? q.where(eb => eb(eb.refTuple('post.sort_at', 'post.id'), '<', eb.tuple(sortAt, id)))
    : q) as unknown as Q
}

/** v2's pages: the posts after a position in the default order (sort_at desc, id desc). */
const postsAfter = keysetList({
  key: 'post.id',
  positioned: (db, v: Keyset) => afterPosition(selectPosts(db).select('post.sort_at'), v),
  keys: (db, v: Keyset) => afterPosition(db.selectFrom('post'), v),
  rows: db => selectPosts(db).select('post.sort_at'),
  order: [
    { column: 'post.sort_at', direction: 'desc' },
    { column: 'post.id', direction: 'desc' }
  ],
  narrow: v => v.creatorId !== undefined
})

/**
 * v2's keyset page of published posts in the default order (sort_at desc, id desc, on the
 * post_sort_at_idx index): the `limit` posts after `after`, so a deep page costs what the first
 * does, and a post written meanwhile (it sorts first) never shifts the pages that follow.
 */
export async function listPostsAfter (
  db: Executor,
  query: PostFilters & { limit: number },
  after?: PostPosition
): Promise<{ posts: Post[]; total: number; next?: PostPosition }> {
  const values = filterValues(query, {}, clockMs())
  const counted = counterTotal(db, values) ?? (() => postList.count(db, values))
  const [rows, total] = await Promise.all([
    // after a position, the index is entered there; visibleUntil as well would make SQLite enter it at that bound
    // Object.assign, not a spread that gains keys (see compiledList's page)
    postsAfter.page(
      db,
      Object.assign({}, values, { visibleUntil: after ? undefined : values.visibleUntil, sortAt: after?.sort_at, id: after?.id }),
      query.limit + 1
    ),
    counted()
  ])
  const more = rows.length > query.limit
  const shown = rows.slice(0, query.limit)
  const last = shown.at(-1)
  return {
    posts: shown.map(toPost),
    total,
    next: more && last ? { sort_at: toDate(last.sort_at).toISOString(), id: last.id } : undefined
  }
}

/** GET /creators/{profileId}/posts: the creator is checked first (ProfileNotFound, ProfileNotCreator). */
export async function listCreatorPosts (db: Executor, profileId: string, query: CreatorPostListQuery) {
  await getCreator(db, profileId)
  return listPosts(db, query, { creatorId: profileId })
}

/**
 * Creates a post and its tag rows, all or nothing; a taken slug is 409, from the unique
 * constraint (post_creator_slug_unique), so concurrent creates of one slug cannot both win.
 */
export async function createPost (db: Executor, creatorId: string, input: PostCreate): Promise<Post> {
  const id = randomUUID()
  const now = writeTimeIso()
  const publishedAt = input.published_at === undefined ? now : input.published_at === null ? null : parseDateTimeInput(input.published_at)
  const tags = normaliseTags(input.tags ?? [])
  const slug = input.slug ?? slugify(input.title)
  const row = {
    id,
    creator_id: creatorId,
    ...writableColumns(input, slug, tags, publishedAt),
    created_at: now,
    updated_at: now,
    sort_at: latest(now, publishedAt)
  }
  return withSlugConflict(() => slug, () => writeTogether(
    db,
    async db => toPost((await insertPostReturning(db, undefined, row))[0]),
    async trx => {
      await insertPost(trx, undefined, row)
      await writeTags(trx, id, tags)
      return toPost((await postById(trx, id))[0])
    }
  ))
}

/**
 * PUT and PATCH: replaces the writable fields. An absent slug or published_at keeps the stored
 * one, a null slug is derived from the title again; an absent or null body, tags or media_url is
 * cleared. sort_at moves to now, so an updated post moves up the default order. The guard and
 * the merge judge the post as it is written (changeRow).
 */
export async function updatePost (db: Executor, postId: string, viewerId: string, change: Change<Post, PostUpdate>, guard: Guard): Promise<Post> {
  let slug: string | undefined
  return withSlugConflict(() => slug, () => changeRow(db, {
    lock: db => db.selectFrom('post').select('id').where('id', '=', postId),
    read: async db => {
      const current = visibleOr404((await postToChange(db, postId))[0], postId, viewerId)
      const post = toPost(current)
      guard(post)
      const input = bodyOf(change, post)
      slug = input.slug === undefined ? current.slug : (input.slug ?? slugify(input.title))
      const now = writeTimeIso()
      const publishedAt =
        input.published_at === undefined
          ? current.published_at === null
            ? null
            : toDate(current.published_at).toISOString()
          : input.published_at === null
            ? null
            : parseDateTimeInput(input.published_at)
      const tags = normaliseTags(input.tags ?? [])
      const columns = {
        ...writableColumns(input, slug, tags, publishedAt),
        updated_at: now,
        sort_at: latest(now, publishedAt, toDate(current.created_at).toISOString())
      }
      return { version: current.version, columns, tags }
    },
    statement: async (db, { version, columns }) => {
      const [row] = await updatePostReturning(db, undefined, { ...columns, id: postId, version: version! })
      return row && toPost(row)
    },
    steps: async (trx, { columns, tags }) => {
      await trx.updateTable('post').set(columns).where('id', '=', postId).execute()
      await trx.deleteFrom('post_tag').where('post_id', '=', postId).execute()
      await writeTags(trx, postId, tags)
      return toPost((await postById(trx, postId))[0])
    }
  }))
}

/** The post a change reads: as postById reads it, with the row's version (changeRow). */
const postToChange = cachedStatement((db, postId: string) =>
  selectPosts(db).select(rowVersion(db, 'post').as('version')).where('post.id', '=', postId))

/**
 * The update in one statement (changeRow's), where the post still has the version read: the
 * post's row, the tags no longer listed deleted and the new ones inserted (from the post's own
 * JSON list, as the create does), the post read back with its creator joined. The kept tags'
 * rows stay, so the insert never meets a row the delete is removing.
 */
const updatePostReturning = cachedStatementPerShape((db, _: undefined, v: Updateable<PostTable> & { id: string; version: string } & Values) => {
  const { id, version, ...columns } = v
  return withPerson(
    db
      .with('changed', q => q.updateTable('post').set(columns).where('post.id', '=', id).where(sameVersion('post', version)).returningAll())
      .with('gone_tag', q => q.deleteFrom('post_tag')
        .where('post_tag.post_id', 'in', eb => eb.selectFrom('changed').select('changed.id'))
        .where('post_tag.tag', 'not in', eb => eb.selectFrom('changed').select(sql<string>`json_array_elements_text(changed.tags::json)`.as('tag'))))
      .with('new_tag', q => q.insertInto('post_tag').columns(['post_id', 'tag'])
        .expression(eb => eb.selectFrom('changed').select(['changed.id', sql<string>`json_array_elements_text(changed.tags::json)`.as('tag')]))
        .onConflict(oc => oc.columns(['post_id', 'tag']).doNothing()))
      .selectFrom('changed as post')
  )
})

/** The PUT body that keeps a post as it is (slug and published_at, left out, keep theirs): what a PATCH merges into. */
export function postFields (post: Post): PostUpdate {
  return { type: post.type, title: post.title, body: post.body, tags: post.tags, media_url: post.media_url }
}

/** DELETE: removes the post; its tags, reviews and comments go with it (foreign keys cascade). */
export async function deletePost (db: Executor, postId: string, viewerId: string, guard: Guard): Promise<void> {
  await db.transaction().execute(async trx => {
    guard(toPost(await lockVisible(trx, postId, viewerId)))
    // its alerts go with it (they tell of a post nobody can open), with their e-mails while unsent
    const alerts = trx.selectFrom('alert').select('id').where('post_id', '=', postId)
    await trx.deleteFrom('outbox_message').where('alert_id', 'in', alerts).where('sent_at', 'is', null).execute()
    await trx.deleteFrom('alert').where('post_id', '=', postId).execute()
    await trx.deleteFrom('post').where('id', '=', postId).execute()
  })
}

/**
 * GET /users/{userId}/posts/{postId}: the user's own post, and an e-mail about it queued in
 * the same transaction (none while the user's address is unverified). The route has checked
 * the caller is that user and an active creator.
 */
export async function getUserPost (db: Executor, userId: string, postId: string, guard: Guard): Promise<Post> {
  return db.transaction().execute(async trx => {
    const row = await findVisible(trx, postId, userId)
    const post = toPost(row)
    guard(post)
    // Skipped, not refused, while the address is unverified: the read itself is what was asked for.
    const to = await verifiedAddress(trx, userId)
    if (to === undefined) return post
    await enqueueEmail(trx, {
      to,
      subject: 'Your post on Roja', // fixed: no user-written text in a mail header
      body:
        `Here is your post "${post.title}" (${post.type.toLowerCase()}, slug ${post.slug}).\n` +
        `Status: ${statusOf(row)}.\nLast updated: ${post.updated_at}.\n`
    })
    return post
  })
}

function statusOf (row: PostRow): string {
  if (row.published_at === null) return 'draft'
  return toDate(row.published_at).getTime() <= clockMs()
    ? `published ${formatDateTime(row.published_at)}`
    : `scheduled for ${formatDateTime(row.published_at)}`
}

/** The row to change, locked until the transaction ends. */
async function lockVisible (trx: Executor, postId: string, viewerId: string): Promise<PostRow> {
  await lockForUpdate(trx, trx.selectFrom('post').select('id').where('id', '=', postId))
  return findVisible(trx, postId, viewerId)
}

/** The work, its unique violation answered as 409 Conflict naming the slug (known once the work has read the post). */
async function withSlugConflict<T> (slug: () => string | undefined, work: () => Promise<T>): Promise<T> {
  try {
    return await work()
  } catch (err) {
    // The unique constraint decides, so two concurrent writes cannot both take a slug.
    if (uniqueViolation(err) !== undefined) throw new AppError('Conflict', `you already have a post with the slug ${slug() ?? ''}`.trim())
    throw err
  }
}

const insertPost = cachedStatementPerShape((db, _: undefined, row: Insertable<PostTable> & Values) => db.insertInto('post').values(row))
const insertTags = cachedStatementPerShape((db, _: undefined, v: { postId: string; tags: string[] }) =>
  db.insertInto('post_tag').values(v.tags.map(tag => ({ post_id: v.postId, tag })))
)

/**
 * The create in one statement (writeTogether's): the post and its tags inserted by data-modifying
 * CTEs (the tag rows from the post's own JSON list of them, so any number of tags is one shape),
 * the post read back from the first with its creator joined, as postById reads it. The tag rows'
 * foreign key is checked at the statement's end, when the post is there.
 */
const insertPostReturning = cachedStatementPerShape((db, _: undefined, row: Insertable<PostTable> & Values) =>
  withPerson(
    db
      .with('new_post', q => q.insertInto('post').values(row).returningAll())
      .with('new_post_tag', q => q.insertInto('post_tag').columns(['post_id', 'tag']).expression(eb => eb
        .selectFrom('new_post')
        .select(['new_post.id', sql<string>`json_array_elements_text(new_post.tags::json)`.as('tag')])))
      .selectFrom('new_post as post')
  )
)

async function writeTags (trx: Executor, postId: string, tags: string[]): Promise<void> {
  if (tags.length > 0) await insertTags(trx, undefined, { postId, tags })
}

/** Tags are matched case-insensitively: stored lower-cased, each once, in the order given. */
function normaliseTags (tags: string[]): string[] {
  return [...new Set(tags.map(t => t.toLowerCase()))]
}

/** The slug a title gives: lower-case ASCII words joined by `-` ("Über Café!" → "uber-cafe"). */
export function slugify (title: string): string {
  const slug = title
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 100)
    .replace(/-+$/, '')
  return slug || 'post'
}

/** The columns a create and a replace write alike from the writable fields. */
function writableColumns (input: PostCreate, slug: string, tags: string[], publishedAt: string | null) {
  const body = input.body ?? ''
  return {
    type: input.type,
    slug,
    title: input.title,
    body,
    word_count: wordCount(body),
    tags: JSON.stringify(tags),
    media_url: input.media_url ?? null,
    published_at: publishedAt
  }
}

function latest (...isos: Array<string | null>): string {
  return isos.filter((v): v is string => v !== null).reduce((a, b) => (a > b ? a : b))
}
