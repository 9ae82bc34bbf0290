import { Type, type Static } from './typebox.js'
import { DateTime, DateTimeInput, ListOf, ListQuery, MediaUrl, Nullable, OptionalOrNull, Params, Uuid, ref } from './common.js'
import { MergePatchOf } from './merge-patch.js'

export const POST_TYPES = ['ARTICLE', 'COURSE'] as const
export const PostType = Type.Unsafe<typeof POST_TYPES[number]>({ type: 'string', enum: [...POST_TYPES], examples: ['ARTICLE'] })

/** Who wrote something, as every resource shows a person: never e-mail or password data. */
export const UserSummary = Type.Object({
  id: Uuid,
  username: Type.String({ examples: ['ada_lovelace'] }),
  first_name: Type.String({ examples: ['Ada'] }),
  last_name: Nullable(Type.String({ examples: ['Lovelace'] }))
}, { $id: 'UserSummary', title: 'UserSummary', additionalProperties: false })
export type UserSummary = Static<typeof UserSummary>

export const Post = Type.Object({
  id: Uuid,
  type: PostType,
  slug: Type.String({ examples: ['my-first-post'] }),
  title: Type.String({ examples: ['My first post'] }),
  body: Type.String(),
  word_count: Type.Integer({ minimum: 0, description: 'words in the body (runs of characters between white space)', examples: [14] }),
  tags: Type.Array(Type.String(), { examples: [['fastify', 'api']] }),
  media_url: Nullable(Type.String({ format: 'uri', description: 'on an allowed internal media host' })),
  creator: ref(UserSummary),
  published_at: Nullable(DateTime),
  created_at: DateTime,
  updated_at: DateTime
}, { $id: 'Post', title: 'Post', additionalProperties: false })
export type Post = Static<typeof Post>

export const SLUG_PATTERN = '^[a-z0-9]+(-[a-z0-9]+)*$'
export const TAG_PATTERN = '^[A-Za-z0-9][A-Za-z0-9_-]*$'
export const TAGS_MAX = 10
export const TAG_MAX_LENGTH = 32

/**
 * The writable fields, the same body for POST and PUT. Only `title` and `type`
 * are required. On PUT an absent `slug` or `published_at` keeps the stored value (they were
 * derived by the server), a null slug is derived from the title again; an absent or null body,
 * tags or media_url is cleared.
 */
const PostFields = {
  type: PostType,
  title: Type.String({ minLength: 1, maxLength: 200, examples: ['My first post'] }),
  slug: OptionalOrNull(Type.String({
    pattern: SLUG_PATTERN,
    maxLength: 100,
    description: 'lower-case words joined by -; derived from the title when absent or null (on PUT: absent keeps it); unique per creator (409)'
  })),
  body: OptionalOrNull(Type.String({ maxLength: 100_000, description: 'absent or null: empty' })),
  tags: OptionalOrNull(Type.Array(Type.String({ pattern: TAG_PATTERN, minLength: 1, maxLength: TAG_MAX_LENGTH }), {
    maxItems: TAGS_MAX,
    description: `at most ${TAGS_MAX} tags of letters, digits, - and _; stored lower-cased, duplicates dropped; absent or null: none`
  })),
  media_url: OptionalOrNull(MediaUrl),
  published_at: OptionalOrNull({
    ...DateTimeInput,
    description: 'absent: now (on PUT: unchanged); a future time schedules the post; null keeps it a draft'
  } as typeof DateTimeInput)
}

export const PostCreate = Type.Object(PostFields, { $id: 'PostCreate', title: 'PostCreate', additionalProperties: false })
export type PostCreate = Static<typeof PostCreate>

export const PostUpdate = Type.Object(PostFields, { $id: 'PostUpdate', title: 'PostUpdate', additionalProperties: false })
export type PostUpdate = Static<typeof PostUpdate>

export const PostPatch = MergePatchOf(PostUpdate, {
  $id: 'PostPatch',
  title: 'PostPatch',
  description: 'JSON Merge Patch of PostUpdate: a member present replaces the field, null clears an optional one (a null slug is ' +
    'derived from the title, a null published_at makes a draft), an absent one is kept',
  members: {
    slug: 'lower-case words joined by -; null: derived from the title again; unique per creator (409)',
    body: 'null: empty',
    tags: `at most ${TAGS_MAX} tags of letters, digits, - and _; stored lower-cased, duplicates dropped; replaced whole; null: none`,
    published_at: 'a future time schedules the post; null makes it a draft'
  }
})
export type PostPatch = Static<typeof PostPatch>

export const PostList = ListOf('posts', ref(Post), 'PostList')
export type PostList = Static<typeof PostList>

export const POST_SORTABLE = ['created_at', 'updated_at', 'published_at', 'title'] as const
const POST_DEFAULT_SORT = 'latest of updated_at, published_at and created_at, newest first'

/** `tags=a,b`: posts that carry every one of the named tags (case-insensitive). */
const TagsFilter = Type.Optional(Type.String({
  pattern: `^[A-Za-z0-9][A-Za-z0-9_-]{0,${TAG_MAX_LENGTH - 1}}(,[A-Za-z0-9][A-Za-z0-9_-]{0,${TAG_MAX_LENGTH - 1}}){0,${TAGS_MAX - 1}}$`,
  description: 'comma-separated tags; a post must carry all of them',
  examples: ['fastify,api']
}))
const TypeFilter = Type.Optional(PostType)

/** GET /posts: the public list, with the creator filter. */
export const PostListQuery = ListQuery(POST_SORTABLE, {
  type: TypeFilter,
  tags: TagsFilter,
  creator_id: Type.Optional(Uuid)
}, POST_DEFAULT_SORT)
export type PostListQuery = Static<typeof PostListQuery>

/** Lists that are already one creator's (/users/me/posts, /creators/{profileId}/posts). */
export const CreatorPostListQuery = ListQuery(POST_SORTABLE, { type: TypeFilter, tags: TagsFilter }, POST_DEFAULT_SORT)
export type CreatorPostListQuery = Static<typeof CreatorPostListQuery>

export const PostParams = Params({ postId: Uuid })
export const UserPostParams = Params({ userId: Uuid, postId: Uuid })
export const CreatorParams = Params({ profileId: Uuid })
