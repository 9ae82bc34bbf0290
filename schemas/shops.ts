import { Type, type Static } from './typebox.js'
import { DateTime, ListOf, ListQuery, OptionalOrNull, Params, Uuid, ref, Nullable } from './common.js'
import { MergePatchOf } from './merge-patch.js'
import { UserSummary } from './posts.js'

/**
 * ISO 4217 codes of the currencies in circulation (list of 2025): fund codes (BOV, CLF, COU,
 * MXV, USN, UYI, UYW, CHE, CHW), precious metals, XDR, XSU, XUA, XTS and XXX are not prices;
 * withdrawn codes (HRK, SLL, ZWL, CUC, ANG) are gone.
 */
export const CURRENCIES = [
  'AED', 'AFN', 'ALL', 'AMD', 'AOA', 'ARS', 'AUD', 'AWG', 'AZN', 'BAM', 'BBD', 'BDT', 'BGN', 'BHD', 'BIF', 'BMD',
  'BND', 'BOB', 'BRL', 'BSD', 'BTN', 'BWP', 'BYN', 'BZD', 'CAD', 'CDF', 'CHF', 'CLP', 'CNY', 'COP', 'CRC', 'CUP',
  'CVE', 'CZK', 'DJF', 'DKK', 'DOP', 'DZD', 'EGP', 'ERN', 'ETB', 'EUR', 'FJD', 'FKP', 'GBP', 'GEL', 'GHS', 'GIP',
  'GMD', 'GNF', 'GTQ', 'GYD', 'HKD', 'HNL', 'HTG', 'HUF', 'IDR', 'ILS', 'INR', 'IQD', 'IRR', 'ISK', 'JMD', 'JOD',
  'JPY', 'KES', 'KGS', 'KHR', 'KMF', 'KPW', 'KRW', 'KWD', 'KYD', 'KZT', 'LAK', 'LBP', 'LKR', 'LRD', 'LSL', 'LYD',
  'MAD', 'MDL', 'MGA', 'MKD', 'MMK', 'MNT', 'MOP', 'MRU', 'MUR', 'MVR', 'MWK', 'MXN', 'MYR', 'MZN', 'NAD', 'NGN',
  'NIO', 'NOK', 'NPR', 'NZD', 'OMR', 'PAB', 'PEN', 'PGK', 'PHP', 'PKR', 'PLN', 'PYG', 'QAR', 'RON', 'RSD', 'RUB',
  'RWF', 'SAR', 'SBD', 'SCR', 'SDG', 'SEK', 'SGD', 'SHP', 'SLE', 'SOS', 'SRD', 'SSP', 'STN', 'SVC', 'SYP', 'SZL',
  'THB', 'TJS', 'TMT', 'TND', 'TOP', 'TRY', 'TTD', 'TWD', 'TZS', 'UAH', 'UGX', 'USD', 'UYU', 'UZS', 'VES', 'VND',
  'VUV', 'WST', 'XAF', 'XCD', 'XCG', 'XOF', 'XPF', 'YER', 'ZAR', 'ZMW', 'ZWG'
] as const

export const Currency = Type.String({
  pattern: '^[A-Z]{3}$',
  enum: [...CURRENCIES],
  description: 'ISO 4217 code of a circulating currency, upper case',
  examples: ['EUR']
})

/** Prices are whole minor units; the cap keeps them exact as JSON numbers and in bigint. */
export const PRICE_MAX = 999_999_999_999
const PriceCents = Type.Integer({ minimum: 0, maximum: PRICE_MAX, description: 'price in the minor unit (cents)' })
const Name = Type.String({ minLength: 1, maxLength: 200 })
const Description = Type.String({ maxLength: 10_000 })

export const Shop = Type.Object({
  id: Uuid,
  owner: ref(UserSummary),
  name: Type.String(),
  description: Nullable(Type.String()),
  created_at: DateTime,
  updated_at: DateTime
}, { $id: 'Shop', title: 'Shop', additionalProperties: false })
export type Shop = Static<typeof Shop>

/** Create and PUT take the same body; PUT replaces, so a missing description becomes null. */
export const ShopWrite = Type.Object({
  name: Name,
  description: OptionalOrNull(Description)
}, { $id: 'ShopWrite', title: 'ShopWrite', additionalProperties: false })
export type ShopWrite = Static<typeof ShopWrite>

export const ShopPatch = MergePatchOf(ShopWrite, {
  $id: 'ShopPatch',
  title: 'ShopPatch',
  description: 'JSON Merge Patch of ShopWrite: a member present replaces the field, null clears the description, an absent one is kept'
})
export type ShopPatch = Static<typeof ShopPatch>

export const ShopList = ListOf('shops', ref(Shop), 'ShopList')

export const SHOP_SORTABLE = ['name', 'created_at', 'updated_at'] as const
export const ShopListQuery = ListQuery(SHOP_SORTABLE, {
  owner_id: Type.Optional(Uuid)
}, '-created_at')
export type ShopListQuery = Static<typeof ShopListQuery>

export const Product = Type.Object({
  id: Uuid,
  shop_id: Uuid,
  name: Type.String(),
  description: Nullable(Type.String()),
  price_cents: Type.Integer({ minimum: 0 }),
  currency: Type.String(),
  created_at: DateTime,
  updated_at: DateTime
}, { $id: 'Product', title: 'Product', additionalProperties: false })
export type Product = Static<typeof Product>

export const ProductWrite = Type.Object({
  name: Name,
  description: OptionalOrNull(Description),
  price_cents: PriceCents,
  currency: Currency
}, { $id: 'ProductWrite', title: 'ProductWrite', additionalProperties: false })
export type ProductWrite = Static<typeof ProductWrite>

export const ProductPatch = MergePatchOf(ProductWrite, {
  $id: 'ProductPatch',
  title: 'ProductPatch',
  description: 'JSON Merge Patch of ProductWrite: a member present replaces the field, null clears the description, an absent one is kept'
})
export type ProductPatch = Static<typeof ProductPatch>

export const ProductList = ListOf('products', ref(Product), 'ProductList')

export const PRODUCT_SORTABLE = ['name', 'price_cents', 'created_at', 'updated_at'] as const
export const ProductListQuery = ListQuery(PRODUCT_SORTABLE, {
  currency: Type.Optional(Currency),
  min_price_cents: Type.Optional(Type.Integer({ minimum: 0, maximum: PRICE_MAX, description: 'only products at this price or more' })),
  max_price_cents: Type.Optional(Type.Integer({ minimum: 0, maximum: PRICE_MAX, description: 'only products at this price or less' }))
}, '-created_at')
export type ProductListQuery = Static<typeof ProductListQuery>

export const ShopParams = Params({ shopId: Uuid })
export const ProductParams = Params({ shopId: Uuid, productId: Uuid })
