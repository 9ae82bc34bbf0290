import { problems, type Problem, type ProblemCode } from './problems.js'

/**
 * Realistic examples of the named schemas, one small world: Ada (a creator) writes, Grace reads,
 * reviews and comments. The OpenAPI documents show them on every request body and success answer;
 * a test validates each against its schema, so they cannot drift from the contract.
 */
const ADA = 'b3e1c7a2-5d4f-4e8a-9c1b-2f6d8e0a4c17'
const GRACE = '4f9d2b6e-8a1c-4d3e-b7f5-0c2a9e6d1b38'
const POST = '7f1d3c1e-8b1a-4c39-9a0e-2f1c7e5d9b10'
const COURSE = 'c5a8e2d4-1b7f-4a9c-8e3d-6f0b2a4c9d71'
const CHAPTER = '2d7e9f1a-3c5b-4e8d-a6f0-b1c3d5e7f9a2'
const LESSON = '8a6c4e2f-0d1b-4f3a-9e5c-7b9d1f3a5c6e'
const REVIEW = 'e1f3a5c7-9b2d-4e6f-8a0c-2d4f6a8c0e1b'
const COMMENT = '5c7e9a1b-3d5f-4a7c-9e1b-3d5f7a9c1e3d'
const ALERT = '9e1b3d5f-7a9c-4e1b-8d5f-7a9c1e3b5d7f'
const SHOP = '3a5c7e9b-1d3f-4b5d-8f1a-3c5e7a9b1d3f'
const PRODUCT = '6f8a0c2e-4b6d-4f8a-9c2e-4b6d8f0a2c4e'
const CLASS = '1b3d5f7a-9c1e-4d5f-a7b9-c1e3f5a7b9d1'
const STUDENT = 'a7c9e1b3-d5f7-4a9c-b1e3-d5f7a9c1e3b5'
const MEDIA = 'd4f6a8c0-e2b4-4d6f-8a0c-e2b4d6f8a0c2'
const CREATED = '2026-11-21T09:30:00+0000'
const UPDATED = '2026-11-22T14:05:00+0000'

const ada = { id: ADA, username: 'ada_lovelace', first_name: 'Ada', last_name: 'Lovelace' }
const grace = { id: GRACE, username: 'grace_hopper', first_name: 'Grace', last_name: 'Hopper' }

const post = {
  id: POST,
  type: 'ARTICLE',
  slug: 'notes-on-the-analytical-engine',
  title: 'Notes on the Analytical Engine',
  body: 'The engine weaves algebraic patterns just as the Jacquard loom weaves flowers and leaves.',
  word_count: 14,
  tags: ['computing', 'history'],
  media_url: `https://media.roja.dev/v1/media/${MEDIA}`,
  creator: ada,
  published_at: CREATED,
  created_at: CREATED,
  updated_at: UPDATED
}
const postWrite = {
  type: 'ARTICLE',
  title: 'Notes on the Analytical Engine',
  body: 'The engine weaves algebraic patterns just as the Jacquard loom weaves flowers and leaves.',
  tags: ['computing', 'history'],
  published_at: '2026-11-21T09:30:00Z'
}
const profileFields = { first_name: 'Ada', last_name: 'Lovelace', age: 36, favorite_band: 'Queen', website: 'https://ada.example.com' }
const profile = {
  id: ADA,
  username: 'ada_lovelace',
  ...profileFields,
  avatar_url: `https://media.roja.dev/v1/media/${MEDIA}`,
  is_creator: true,
  created_at: CREATED,
  updated_at: UPDATED
}

export const examples: Record<string, unknown> = {
  Queued: { status: 'queued' },
  Health: { status: 'ok', checks: { database: 'ok' } },
  Version: { version: '0.1.0', api_versions: ['v1', 'v2'], commit: '5b1023b' },
  TokenRequest: { username: 'ada_lovelace', password: 'correct horse battery staple' },
  TokenForm: { grant_type: 'password', username: 'ada_lovelace', password: 'correct horse battery staple' },
  TokenResponse: {
    access_token:
      'eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.' +
        'eyJpZCI6ImIzZTFjN2EyLTVkNGYtNGU4YS05YzFiLTJmNmQ4ZTBhNGMxNyIsImlhdCI6MTc2NDMyMzAwMCwiZXhwIjoxNzY0MzI2NjAwfQ.' +
        'Lq3n6W5v2m0ZVQ7xk4bJ0s1p9cHh8eYtRr2uF3dGk0A',
    token_type: 'Bearer',
    expires_in: 3600
  },
  ProfileCreate: { username: 'ada_lovelace', email: 'ada@example.com', password: 'correct horse battery staple', ...profileFields },
  ProfileUpdate: { ...profileFields, avatar_url: `https://media.roja.dev/v1/media/${MEDIA}` },
  ProfilePatch: { favorite_band: 'Pink Floyd', website: null },
  Profile: profile,
  MyProfile: { ...profile, email: 'ada@example.com', email_verified: true },
  EmailVerification: { token: 'q3X9vR2mWc7LpA4sJgT0bg' },
  PasswordChange: { current_password: 'correct horse battery staple', new_password: 'tr0ub4dor and three more words' },
  PasswordResetRequest: { email: 'ada@example.com' },
  PasswordResetConfirmation: { token: 'Zr8Qm2vXc7LpA4sJgT0bgK', new_password: 'tr0ub4dor and three more words' },
  EmailChange: { current_password: 'correct horse battery staple', email: 'ada@lovelace.example' },
  AccountDeletion: { current_password: 'correct horse battery staple' },
  UserSummary: ada,
  Post: post,
  PostCreate: postWrite,
  PostUpdate: { ...postWrite, slug: 'notes-on-the-analytical-engine', title: 'Notes on the Analytical Engine (revised)' },
  PostPatch: { title: 'Notes on the Analytical Engine (revised)', media_url: null },
  Course: {
    ...post,
    id: COURSE,
    type: 'COURSE',
    slug: 'programming-the-engine',
    title: 'Programming the Engine',
    tags: ['course'],
    chapters_count: 3
  },
  Chapter: { id: CHAPTER, course_id: COURSE, title: 'Operation cards', position: 1, created_at: CREATED, updated_at: UPDATED },
  ChapterCreate: { title: 'Operation cards', position: 1 },
  ChapterPatch: { position: 2 },
  Lesson: {
    id: LESSON,
    chapter_id: CHAPTER,
    title: 'Loops with the Jacquard cards',
    body: 'A card that backs the chain repeats a set ' + 'of operations.',
    position: 2,
    created_at: CREATED,
    updated_at: UPDATED
  },
  LessonCreate: { title: 'Loops with the Jacquard cards', body: 'A card that backs the chain repeats a set of operations.' },
  LessonPatch: { title: 'Loops and the backing card', position: 1 },
  Review: { id: REVIEW, post_id: POST, author: grace, rating: 5, text: 'Clear, and a century early.', created_at: UPDATED },
  ReviewCreate: { rating: 5, text: 'Clear, and a century early.' },
  ReviewPatch: { text: 'Clear, and a century early. Note G alone is worth it.' },
  Comment: { id: COMMENT, post_id: POST, author: grace, text: 'Note G is my favourite part.', created_at: UPDATED, updated_at: UPDATED },
  CommentWrite: { text: 'Note G is my favourite part.' },
  CommentPatch: { text: 'Note G is still my favourite part.' },
  Alert: {
    id: ALERT,
    kind: 'review',
    message: 'grace_hopper left a review on your post "Notes on the Analytical Engine"',
    post_id: POST,
    created_at: UPDATED,
    sent_at: UPDATED
  },
  Shop: { id: SHOP, owner: ada, name: 'Engine Parts', description: 'Brass gears and punched cards.', created_at: CREATED, updated_at: UPDATED },
  ShopWrite: { name: 'Engine Parts', description: 'Brass gears and punched cards.' },
  ShopPatch: { name: 'Engine Parts Ltd' },
  Product: {
    id: PRODUCT,
    shop_id: SHOP,
    name: 'Set of 40 operation cards',
    description: 'Hand-punched, numbered.',
    price_cents: 2500,
    currency: 'GBP',
    created_at: CREATED,
    updated_at: UPDATED
  },
  ProductWrite: { name: 'Set of 40 operation cards', description: 'Hand-punched, numbered.', price_cents: 2500, currency: 'GBP' },
  ProductPatch: { price_cents: 2600 },
  Class: {
    id: CLASS,
    owner: ada,
    name: 'Engine programming, winter group',
    course_id: COURSE,
    starts_date: '2027-01-11',
    created_at: CREATED,
    updated_at: UPDATED
  },
  ClassCreate: { name: 'Engine programming, winter group', course_id: COURSE, starts_date: '2027-01-11' },
  ClassPatch: { starts_date: '2027-02-01' },
  Student: {
    id: STUDENT,
    class_id: CLASS,
    first_name: 'Mary',
    last_name: 'Somerville',
    sex: 'F',
    email: 'mary@example.com',
    created_at: CREATED,
    updated_at: UPDATED
  },
  StudentCreate: { first_name: 'Mary', last_name: 'Somerville', sex: 'F', email: 'mary@example.com' },
  StudentPatch: { last_name: 'Fairfax Somerville', email: null },
  Media: {
    id: MEDIA,
    url: `https://media.roja.dev/v1/media/${MEDIA}`,
    content_type: 'image/png',
    size: 48213,
    sha256: '9f2c8e1a4b7d3f6e0c5a8b2d9e4f1a7c3b6d0e8f2a5c9b1d4e7f0a3c6b9d2e5f',
    created_at: CREATED
  }
}

/** Examples of a named schema in an answer of another status than 2xx (the health check's 503). */
export const examplesByStatus: Record<string, Record<string, unknown>> = {
  Health: { 503: { status: 'unavailable', checks: { database: 'unavailable' } } }
}

/** Ids by path parameter, so that example problems name realistic paths. */
const PATH_IDS: Record<string, string> = {
  postId: POST,
  profileId: ADA,
  userId: ADA,
  courseId: COURSE,
  chapterId: CHAPTER,
  lessonId: LESSON,
  reviewId: REVIEW,
  commentId: COMMENT,
  alertId: ALERT,
  shopId: SHOP,
  productId: PRODUCT,
  classId: CLASS,
  studentId: STUDENT,
  mediaId: MEDIA
}

const DETAILS: Partial<Record<ProblemCode, string>> = {
  PostNotFound: `no post with id ${POST}`,
  NotAuthenticated: 'this route needs a bearer token',
  InvalidCredentials: 'the token is not valid or has expired',
  TokenInQuery: 'send the token in the Authorization header, never in the URL',
  UserNotOwner: 'only the owner may do this',
  UserIsBanned: 'this account is banned',
  UserNotCreator: 'only creators may do this',
  Conflict: 'the value is already taken',
  PreconditionFailed: 'If-Match names an ETag the resource no longer has',
  RateLimited: 'rate limit of 300 requests exceeded, retry in 42 seconds',
  ServiceUnavailable: 'the server is busy, try again later',
  NotAcceptable: 'this route answers application/json (errors as application/problem+json); the Accept header allows neither',
  UnsupportedMediaType: 'Content-Type must be application/json',
  MalformedBody: 'the body is not valid JSON',
  PayloadTooLarge: 'the request body is over its size limit',
  InvalidUserData: 'bad username, choose another',
  EmailNotVerified: 'verify your e-mail address first: open the link Roja mailed you, or ask for a new one',
  EmailAlreadyVerified: 'this e-mail address is already verified',
  InvalidVerificationToken: 'this verification link has expired: sign in and ask for a new one',
  WrongPassword: 'the current password is wrong',
  InvalidResetToken: 'this password-reset link has expired: ask for a new one'
}

export function problemExample (code: ProblemCode, path: string): Problem {
  const { status, title } = problems[code]
  const instance = path.replace(/\{(\w+)\}/g, (_m, name: string) => PATH_IDS[name] ?? POST)
  const kebab = code.replace(/([a-z0-9])([A-Z])/g, '$1-$2').toLowerCase()
  const body: Problem = { type: `https://roja.dev/problems/${kebab}`, title, status, detail: DETAILS[code] ?? title.toLowerCase(), instance, code }
  if (code === 'ValidationFailed') {
    body.detail = '/limit: must be 100 or less'
    body.errors = [{ in: 'query', field: '/limit', rule: 'maximum', message: 'must be 100 or less' }]
  }
  return body
}

type Schema = Record<string, any>

/**
 * The example of a schema as the document holds it: a named component's own example, or one
 * built from its parts (a list of one item, a total of 1). Undefined for bytes.
 */
export function exampleOf (schema: Schema | undefined, components: Record<string, Schema>, depth = 0): unknown {
  if (!schema || depth > 8) return undefined
  if (typeof schema.$ref === 'string') {
    const name = schema.$ref.split('/').pop()!
    return name in examples ? examples[name] : exampleOf(components[name], components, depth + 1)
  }
  if (schema.examples?.length) return schema.examples[0]
  if (schema.const !== undefined) return schema.const
  if (schema.enum) return schema.enum[0]
  const types: string[] = [schema.type ?? []].flat()
  if (types.includes('null') && types.length > 1 && !schema.properties) return null
  switch (types[0]) {
    case 'object': {
      if (!schema.properties) return undefined
      const out: Record<string, unknown> = {}
      for (const [key, value] of Object.entries<Schema>(schema.properties)) {
        const example = key === 'total' ? 1 : exampleOf(value, components, depth + 1)
        if (example !== undefined) out[key] = example
      }
      return out
    }
    case 'array': {
      const item = exampleOf(schema.items, components, depth + 1)
      return item === undefined ? [] : [item]
    }
    case 'integer':
    case 'number':
      return schema.minimum ?? 1
    case 'boolean':
      return true
    case 'string':
      return schema.format === 'binary' ? undefined : 'text'
  }
  return undefined
}
