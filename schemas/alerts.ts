import { Type, type Static } from './typebox.js'
import { DateTime, ListOf, ListQuery, Params, Uuid, ref, Nullable } from './common.js'

export const AlertKind = Type.Union([Type.Literal('review'), Type.Literal('comment')], {
  description: 'what happened on your post'
})
export type AlertKind = Static<typeof AlertKind>

export const Alert = Type.Object({
  id: Uuid,
  kind: AlertKind,
  message: Type.String({ examples: ['ada left a review on your post "Hello"'] }),
  post_id: Nullable(Uuid, { description: 'the post it is about; null once the post is deleted' }),
  created_at: DateTime,
  sent_at: Nullable(DateTime, { description: 'when its e-mail was last delivered; null until then' })
}, { $id: 'Alert', title: 'Alert', additionalProperties: false })
export type Alert = Static<typeof Alert>

export const AlertList = ListOf('alerts', ref(Alert), 'AlertList')
export type AlertList = Static<typeof AlertList>

export const ALERT_SORTABLE = ['created_at'] as const
export const AlertListQuery = ListQuery(ALERT_SORTABLE, {
  kind: Type.Optional(AlertKind)
}, '-created_at')
export type AlertListQuery = Static<typeof AlertListQuery>

export const AlertParams = Params({ alertId: Uuid })
export type AlertParams = Static<typeof AlertParams>
