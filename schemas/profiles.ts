import { Type, type Static } from './typebox.js'
import { DateTime, MediaUrl, Nullable, OptionalOrNull, Uuid } from './common.js'
import { MergePatchOf } from './merge-patch.js'

/** The fixed list of favorite_band values (spec UserBase: "only values from a fixed list"). */
export const BANDS = [
  'ABBA', 'Arctic Monkeys', 'Daft Punk', 'Fleetwood Mac', 'Led Zeppelin', 'Metallica',
  'Nirvana', 'Pink Floyd', 'Queen', 'Radiohead', 'The Beatles', 'The Rolling Stones'
] as const
export type Band = typeof BANDS[number]

/**
 * The username as sent: the API strips surrounding whitespace and lower-cases it, which Ajv
 * cannot do, so the schema lets surrounding whitespace through and the domain (normaliseUsername)
 * trims and lower-cases before the value is used or stored. The core is ^[A-Za-z0-9_-]+$.
 */
export const USERNAME_PATTERN = '^\\s*[A-Za-z0-9_-]+\\s*$'
const UsernameInput = Type.String({
  pattern: USERNAME_PATTERN,
  maxLength: 64,
  description: 'letters, digits, - and _; surrounding whitespace is stripped and the value lower-cased; "me" is reserved',
  examples: ['ada_lovelace']
})
const FirstName = Type.String({ minLength: 1, maxLength: 128, examples: ['Ada'] })
const LastName = Type.String({ maxLength: 128, examples: ['Lovelace'] })
const Email = Type.String({ format: 'email', maxLength: 254, description: 'stored lower-cased; unique', examples: ['ada@example.com'] })
const Age = Type.Integer({ minimum: 18, maximum: 150 })
const FavoriteBand = Type.Unsafe<Band>({ type: 'string', enum: [...BANDS], description: 'one of a fixed list of bands' })
const Website = Type.String({ format: 'uri', pattern: '^https?://', maxLength: 2048, examples: ['https://ada.example.com'] })
// scrypt's cost does not depend on the length, but an upper bound keeps request bodies sane.
const Password = Type.String({ minLength: 12, maxLength: 1024, description: 'at least 12 characters; never returned', writeOnly: true })

/** The writable profile fields, shared by sign-up and PUT /profiles/me. */
const ProfileFields = {
  first_name: FirstName,
  last_name: OptionalOrNull(LastName),
  age: OptionalOrNull(Age),
  favorite_band: OptionalOrNull(FavoriteBand),
  website: OptionalOrNull(Website)
}

/** Sign-up body: username, email, password and the profile fields. */
export const ProfileCreate = Type.Object({
  username: UsernameInput,
  email: Email,
  password: Password,
  ...ProfileFields
}, { $id: 'ProfileCreate', title: 'ProfileCreate', additionalProperties: false })
export type ProfileCreate = Static<typeof ProfileCreate>

/** PUT /profiles/me replaces the writable fields: an absent or null optional field becomes null. */
export const ProfileUpdate = Type.Object({
  ...ProfileFields,
  avatar_url: OptionalOrNull(MediaUrl)
}, { $id: 'ProfileUpdate', title: 'ProfileUpdate', additionalProperties: false })
export type ProfileUpdate = Static<typeof ProfileUpdate>

export const ProfilePatch = MergePatchOf(ProfileUpdate, {
  $id: 'ProfilePatch',
  title: 'ProfilePatch',
  description: 'JSON Merge Patch of ProfileUpdate: a member present replaces the field, null clears an optional one, an absent one is kept'
})
export type ProfilePatch = Static<typeof ProfilePatch>

const ProfileProperties = {
  id: Uuid,
  username: Type.String({ examples: ['ada_lovelace'] }),
  first_name: Type.String({ examples: ['Ada'] }),
  last_name: Nullable(Type.String()),
  age: Nullable(Type.Integer()),
  favorite_band: Nullable(FavoriteBand),
  website: Nullable(Type.String()),
  avatar_url: Nullable(Type.String()),
  is_creator: Type.Boolean(),
  created_at: DateTime,
  updated_at: DateTime
}

/** The public profile: never e-mail or password data. Its id is the user's id. */
export const Profile = Type.Object(ProfileProperties, {
  $id: 'Profile', title: 'Profile', additionalProperties: false
})
export type Profile = Static<typeof Profile>

/** The caller's own profile: the public one plus the e-mail address and whether it is verified. */
export const MyProfile = Type.Object({
  ...ProfileProperties,
  email: Type.String(),
  email_verified: Type.Boolean({
    description: 'whether the owner confirmed the address (the link Roja mails at sign-up); ' +
    'until then Roja mails it nothing else'
  })
}, {
  $id: 'MyProfile', title: 'MyProfile', additionalProperties: false
})
export type MyProfile = Static<typeof MyProfile>

export const ProfileParams = Type.Object({ profileId: Uuid }, { additionalProperties: false })
