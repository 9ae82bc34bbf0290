import { Nullable } from './common.js'
import { Type, type Static } from './typebox.js'

export const Health = Type.Object({
  status: Type.Union([Type.Literal('ok'), Type.Literal('unavailable')]),
  checks: Type.Object({
    database: Type.Union([Type.Literal('ok'), Type.Literal('unavailable')])
  }, { additionalProperties: false })
}, { $id: 'Health', title: 'Health', additionalProperties: false })
export type Health = Static<typeof Health>

export const Version = Type.Object({
  version: Type.String({ examples: ['0.1.0'] }),
  api_versions: Type.Array(Type.String(), { examples: [['v1', 'v2']] }),
  commit: Nullable(Type.String())
}, { $id: 'Version', title: 'Version', additionalProperties: false })
export type Version = Static<typeof Version>
