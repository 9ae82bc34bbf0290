import type { ColumnType, Generated } from 'kysely'

/**
 * Timestamps are written as ISO strings and read back as the same ISO text on both dialects:
 * SQLite stores the text, and PostgreSQL's timestamptz parser (src/db/dialect.ts) gives it.
 */
type Timestamp = ColumnType<string, string, string>
/** Dates (`_date`) travel as 'YYYY-MM-DD' on both dialects (pg's DATE parser is set to keep the text). */
type DateText = string
/** Booleans: SQLite stores 0/1, PostgreSQL boolean; write booleans, read with `Boolean()`. */
type Bool = ColumnType<boolean | number, boolean, boolean>

export interface UserTable {
  id: string
  username: string
  email: string
  password_hash: string
  is_active: Bool
  is_creator: Bool
  /** bumped to revoke every token issued before (migration 2026_11_23_0100) */
  token_generation: ColumnType<number, number | undefined, number>
  /** when the address was confirmed; null: not verified, so only verification mail goes to it (migration 2026_11_23_0200) */
  email_verified_at: ColumnType<string | null, string | null | undefined, string | null>
  created_at: Timestamp
  updated_at: Timestamp
}

export interface ProfileTable {
  id: string // = user.id
  first_name: string
  last_name: string | null
  age: number | null
  favorite_band: string | null
  website: string | null
  avatar_url: string | null
  created_at: Timestamp
  updated_at: Timestamp
}

export interface PostTable {
  id: string
  creator_id: string
  type: 'ARTICLE' | 'COURSE'
  slug: string
  title: string
  body: string
  tags: string // JSON array text; post_tag holds the same tags for filtering
  media_url: string | null
  published_at: Timestamp | null
  created_at: Timestamp
  updated_at: Timestamp
  /** latest of updated_at, published_at, created_at: the default order, indexed */
  sort_at: Timestamp
  /** words in the body; null on a post the previous release wrote (2026_11_29_0301), counted on read */
  word_count: number | null
}

export interface PostTagTable {
  post_id: string
  tag: string
}

/** per post type, the posts with a published_at (published or scheduled); kept by triggers */
export interface PostCounterTable {
  type: string
  /** one of the type's slots; their sum is the count (migration 2026_11_23_0001) */
  slot: number
  published: ColumnType<number, number, number>
}

/** per UTC day and type, the posts written before their day to be published on it; kept by triggers (migration 2026_11_28_0001) */
export interface PostScheduleTable {
  /** YYYY-MM-DD */
  day: string
  type: string
  scheduled: ColumnType<number, number, number>
}

export interface ReviewTable {
  id: string
  post_id: string
  author_id: string
  rating: number
  text: string | null
  created_at: Timestamp
}

export interface CommentTable {
  id: string
  post_id: string
  author_id: string
  text: string
  created_at: Timestamp
  updated_at: Timestamp
}

export interface AlertTable {
  id: string
  user_id: string
  kind: string
  message: string
  post_id: string | null
  /** the review a `review` alert tells of; the alert goes with it (migration 2026_11_29_0100) */
  review_id: ColumnType<string | null, string | null | undefined, string | null>
  created_at: Timestamp
  sent_at: Timestamp | null
}

export interface OutboxMessageTable {
  id: string
  to_address: string
  subject: string
  body: string
  alert_id: string | null
  attempts: Generated<number>
  last_error: string | null
  next_attempt_at: Timestamp
  locked_until_at: Timestamp | null
  sent_at: Timestamp | null
  created_at: Timestamp
}

export interface IdempotencyKeyTable {
  user_id: string
  key: string
  method: string
  path: string
  request_hash: string
  status_code: number | null
  response_body: string | null
  location: string | null
  created_at: Timestamp
  expires_at: Timestamp
}

export interface MediaTable {
  id: string
  owner_id: string
  content_type: string
  size: number
  sha256: string
  storage_key: string
  created_at: Timestamp
}

/** An upload in progress: the bytes it holds against the owner's quota until it ends (migration 2026_11_27_0200). */
export interface MediaUploadTable {
  id: string
  owner_id: string
  reserved_bytes: number
  expires_at: Timestamp
}

/** A mailed verification link, by the HMAC of its token; the address it was sent to (migration 2026_11_27_0100). */
export interface EmailVerificationTable {
  token_hash: string
  user_id: string
  email: string
  /** `verify`: the account's own address; `change`: a new address asked for (migration 2026_11_29_0200) */
  purpose: ColumnType<'verify' | 'change', 'verify' | 'change' | undefined, 'verify' | 'change'>
  expires_at: Timestamp
  created_at: Timestamp
}

/** A mailed password-reset link, by the HMAC of its token (migration 2026_11_29_0200). */
export interface PasswordResetTable {
  token_hash: string
  user_id: string
  expires_at: Timestamp
  created_at: Timestamp
}

export interface ShopTable {
  id: string
  owner_id: string
  name: string
  description: string | null
  created_at: Timestamp
  updated_at: Timestamp
}

export interface ProductTable {
  id: string
  shop_id: string
  name: string
  description: string | null
  price_cents: number
  currency: string
  created_at: Timestamp
  updated_at: Timestamp
}

export interface ChapterTable {
  id: string
  course_id: string
  title: string
  position: number
  created_at: Timestamp
  updated_at: Timestamp
}

export interface LessonTable {
  id: string
  chapter_id: string
  title: string
  body: string | null
  position: number
  created_at: Timestamp
  updated_at: Timestamp
}

export interface ClassTable {
  id: string
  owner_id: string
  name: string
  course_id: string | null
  starts_date: DateText | null
  created_at: Timestamp
  updated_at: Timestamp
}

export interface StudentTable {
  id: string
  class_id: string
  first_name: string
  last_name: string | null
  sex: 'F' | 'M' | 'X'
  email: string | null
  created_at: Timestamp
  updated_at: Timestamp
}

export interface Database {
  user: UserTable
  profile: ProfileTable
  post: PostTable
  post_tag: PostTagTable
  post_counter: PostCounterTable
  post_schedule: PostScheduleTable
  review: ReviewTable
  comment: CommentTable
  alert: AlertTable
  outbox_message: OutboxMessageTable
  idempotency_key: IdempotencyKeyTable
  media: MediaTable
  media_upload: MediaUploadTable
  email_verification: EmailVerificationTable
  password_reset: PasswordResetTable
  shop: ShopTable
  product: ProductTable
  chapter: ChapterTable
  lesson: LessonTable
  class: ClassTable
  student: StudentTable
}
