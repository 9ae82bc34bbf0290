import type { TSchema } from '@sinclair/typebox'
import { QueuedStatus } from './common.js'
import { Problem } from './problems.js'
import { Health, Version } from './operations.js'
import { TokenForm, TokenRequest, TokenResponse } from './auth.js'
import { MyProfile, Profile, ProfileCreate, ProfileUpdate } from './profiles.js'

/** Every named component schema; the app adds them once, and OpenAPI names them by $id. */
export const components: TSchema[] = [
  Problem,
  QueuedStatus,
  Health,
  Version,
  TokenRequest, TokenForm, TokenResponse,
  ProfileCreate, ProfileUpdate, Profile, MyProfile
]
