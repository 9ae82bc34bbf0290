import type { TSchema } from '@sinclair/typebox'
import { QueuedStatus } from './common.js'
import { Problem } from './problems.js'
import { Health, Version } from './operations.js'

/** Every named component schema; the app adds them once, and OpenAPI names them by $id. */
export const components: TSchema[] = [
  Problem,
  QueuedStatus,
  Health,
  Version
]
