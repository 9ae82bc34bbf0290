import { Type, type Static } from './typebox.js'

/**
 * The error catalogue: every problem code declared once with its status and title.
 * The error handler renders from it and routes declare their error responses from it,
 * so the OpenAPI document and the server can never disagree.
 */
export const problems = {
  PostNotFound: { status: 404, title: 'Post not found' },
  ProfileNotFound: { status: 404, title: 'Profile not found' },
  ProfileNotCreator: { status: 404, title: 'Profile is not a creator' },
  MediaNotFound: { status: 404, title: 'Media not found' },
  ShopNotFound: { status: 404, title: 'Shop not found' },
  ProductNotFound: { status: 404, title: 'Product not found' },
  ClassNotFound: { status: 404, title: 'Class not found' },
  StudentNotFound: { status: 404, title: 'Student not found' },
  CourseNotFound: { status: 404, title: 'Course not found' },
  ChapterNotFound: { status: 404, title: 'Chapter not found' },
  LessonNotFound: { status: 404, title: 'Lesson not found' },
  AlertNotFound: { status: 404, title: 'Alert not found' },
  ResourceNotFound: { status: 404, title: 'Resource not found' },
  NotFound: { status: 404, title: 'Not found' },
  NotAuthenticated: { status: 401, title: 'Not authenticated' },
  InvalidCredentials: { status: 401, title: 'Invalid credentials' },
  TokenInQuery: { status: 400, title: 'Token in query string' },
  MalformedBody: { status: 400, title: 'Malformed body' },
  MalformedRequest: { status: 400, title: 'Malformed request' },
  RequestTimeout: { status: 408, title: 'Request timeout' },
  HeadersTooLarge: { status: 431, title: 'Request header fields too large' },
  HttpsRequired: { status: 403, title: 'HTTPS required' },
  UserNotOwner: { status: 403, title: 'User is not the owner' },
  UserIsBanned: { status: 403, title: 'User is banned' },
  UserNotCreator: { status: 403, title: 'User is not a creator' },
  EmailNotVerified: { status: 403, title: 'E-mail address not verified' },
  MethodNotAllowed: { status: 405, title: 'Method not allowed' },
  NotAcceptable: { status: 406, title: 'Not acceptable' },
  Conflict: { status: 409, title: 'Conflict' },
  EmailAlreadyVerified: { status: 409, title: 'E-mail address already verified' },
  PreconditionFailed: { status: 412, title: 'Precondition failed' },
  PayloadTooLarge: { status: 413, title: 'Payload too large' },
  StorageQuotaExceeded: { status: 413, title: 'Storage quota exceeded' },
  RangeNotSatisfiable: { status: 416, title: 'Range not satisfiable' },
  UnsupportedMediaType: { status: 415, title: 'Unsupported media type' },
  InvalidUserData: { status: 422, title: 'Invalid user data' },
  InvalidVerificationToken: { status: 422, title: 'Invalid verification token' },
  ValidationFailed: { status: 422, title: 'Validation failed' },
  RateLimited: { status: 429, title: 'Too many requests' },
  InternalError: { status: 500, title: 'Internal server error' },
  ServiceUnavailable: { status: 503, title: 'Service unavailable' },
  WrongPassword: { status: 403, title: 'Current password is wrong' },
  InvalidResetToken: { status: 422, title: 'Invalid password-reset token' }
} as const satisfies Record<string, { status: number, title: string }>

export type ProblemCode = keyof typeof problems

export const ValidationIssue = Type.Object({
  in: Type.Union([Type.Literal('body'), Type.Literal('query'), Type.Literal('path'), Type.Literal('header')]),
  field: Type.String({ description: 'JSON pointer to the failing value, "" for the whole part' }),
  rule: Type.String({ description: 'the schema keyword that failed, e.g. minLength' }),
  message: Type.String()
}, { additionalProperties: false })
export type ValidationIssue = Static<typeof ValidationIssue>

export const Problem = Type.Object({
  type: Type.String({ format: 'uri' }),
  title: Type.String(),
  status: Type.Integer({ minimum: 100, maximum: 599 }),
  detail: Type.String(),
  instance: Type.String(),
  code: Type.String(),
  errors: Type.Optional(Type.Array(ValidationIssue))
}, {
  $id: 'Problem',
  title: 'Problem',
  description: 'RFC 9457 problem details',
  additionalProperties: false
})
export type Problem = Static<typeof Problem>

/** The response schemas a route declares for the errors it can answer with, keyed by status. */
export function errorResponses (...codes: ProblemCode[]): Record<number, unknown> {
  const out: Record<number, unknown> = {}
  for (const code of codes) {
    const { status } = problems[code]
    out[status] = {
      ...Type.Unsafe<Problem>(Type.Ref('Problem')),
      description: [...new Set([...describe(out[status]), code])].join(' | ')
    }
  }
  return out
}

function describe (existing: unknown): string[] {
  const d = (existing as { description?: string } | undefined)?.description
  return d ? d.split(' | ') : []
}

/**
 * A catalogue error: domain functions, hooks and handlers throw it; the problems plugin renders
 * it as problem+json. It sits beside the catalogue, so every floor can throw one.
 */
export class AppError extends Error {
  readonly code: ProblemCode
  readonly status: number
  readonly errors?: ValidationIssue[]
  readonly headers?: Record<string, string>

  constructor (code: ProblemCode, detail?: string, extra: { errors?: ValidationIssue[], headers?: Record<string, string> } = {}) {
    super(detail ?? problems[code].title)
    this.name = 'AppError'
    this.code = code
    this.status = problems[code].status
    this.errors = extra.errors
    this.headers = extra.headers
  }
}
