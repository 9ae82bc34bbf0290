import { problems, type ProblemCode, type ValidationIssue } from '../../schemas/problems.js'

/**
 * A catalogue error: domain functions, hooks and handlers throw it; the problems plugin renders
 * it as problem+json. It lives here, beside the domain, so throwing one needs no web framework.
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

/** Awaits a single-row query and throws the resource's not-found code when it found nothing. */
export async function orNotFound<T> (row: Promise<T | undefined>, code: ProblemCode, detail: string): Promise<T> {
  const value = await row
  if (value === undefined) throw new AppError(code, detail)
  return value
}
