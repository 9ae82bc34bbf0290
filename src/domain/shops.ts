import { randomUUID } from 'node:crypto'
import { cachedRowStatement, cachedStatementPerShape, type Values } from '../db/statement-cache.js'
import type { Insertable, Selectable, SelectQueryBuilder } from 'kysely'
import type { Db } from '../db/dialect.js'
import type { Database, ProductTable, ShopTable } from '../db/schema.js'
import { writeTogether } from '../db/write-together.js'
import { changeRow, rowVersion, sameVersion } from '../db/row-change.js'
import { lockForUpdate } from '../db/row-lock.js'
import { formatDateTime } from '../db/date-time-format.js'
import { writeTimeIso } from '../db/clock.js'
import type { Product, ProductListQuery, ProductWrite, Shop, ShopListQuery, ShopWrite } from '../../schemas/shops.js'
import { compiledList, type Page } from '../db/paging.js'
import { parseSort } from './list.js'
import { orNotFound } from './errors.js'
import { AppError } from '../../schemas/problems.js'
import { PERSON_COLUMNS, toPerson, type PersonRow } from './person.js'
import { bodyOf, type Change } from './merge-patch.js'

/** Shops and their products: creators open shops, the shop's owner manages it and its products. */

type ShopRow = Selectable<ShopTable>
type ProductRow = Selectable<ProductTable>

/**
 * The route's owner and If-Match checks, run against the row as it is before anything changes:
 * an update's against the very row it writes (changeRow), a delete's under the row's lock, so
 * two writers holding the same ETag cannot both pass.
 */
export type Guard<T> = (current: T) => void

function selectShops (db: Db) {
  return withOwner(db.selectFrom('shop'))
}

/** A shop's columns and its owner's, from `shop` (the table, or a CTE of its rows named so). */
function withOwner<Q extends SelectQueryBuilder<Database & { shop: ShopTable }, 'shop', {}>> (from: Q) {
  return (from as unknown as SelectQueryBuilder<Database, 'shop', {}>)
    .innerJoin('user', 'user.id', 'shop.owner_id')
    .innerJoin('profile', 'profile.id', 'shop.owner_id')
    .selectAll('shop')
    .select([...PERSON_COLUMNS])
}

function toShop (row: ShopRow & PersonRow): Shop {
  return {
    id: row.id,
    owner: toPerson(row.owner_id, row),
    name: row.name,
    description: row.description,
    created_at: formatDateTime(row.created_at),
    updated_at: formatDateTime(row.updated_at)
  }
}

function toProduct (row: ProductRow): Product {
  return {
    id: row.id,
    shop_id: row.shop_id,
    name: row.name,
    description: row.description,
    price_cents: Number(row.price_cents),
    currency: row.currency,
    created_at: formatDateTime(row.created_at),
    updated_at: formatDateTime(row.updated_at)
  }
}

const SHOP_SORT = { name: 'shop.name', created_at: 'shop.created_at', updated_at: 'shop.updated_at' }

const shopList = compiledList((db, v: { owner_id?: string }) => {
  const q = selectShops(db)
  return v.owner_id === undefined ? q : q.where('shop.owner_id', '=', v.owner_id)
})

export async function listShops (db: Db, query: ShopListQuery, page: Page) {
  const sort = parseSort(query.sort, SHOP_SORT, [{ column: 'shop.created_at', direction: 'desc' }], 'shop.id')
  const { rows, total } = await shopList.page(db, { owner_id: query.owner_id }, sort, page)
  return { items: rows.map(toShop), total }
}

const shopById = cachedRowStatement((db, shopId: string) => selectShops(db).where('shop.id', '=', shopId))
const productInShop = cachedRowStatement((db, productId: string, shopId: string) =>
  db.selectFrom('product').selectAll().where('id', '=', productId).where('shop_id', '=', shopId)
)

export async function getShop (db: Db, shopId: string): Promise<Shop> {
  return toShop(await orNotFound(shopById(db, shopId), 'ShopNotFound', `no shop with id ${shopId}`))
}

/** The shop and its read-back with its owner: one statement on PostgreSQL (writeTogether's). */
export async function createShop (db: Db, ownerId: string, body: ShopWrite): Promise<Shop> {
  const now = writeTimeIso()
  const row = { id: randomUUID(), owner_id: ownerId, name: body.name, description: body.description ?? null, created_at: now, updated_at: now }
  return toShop(await writeTogether(
    db,
    async db => (await insertShopReturning(db, undefined, row))[0],
    async trx => {
      await trx.insertInto('shop').values(row).execute()
      return (await shopById(trx, row.id))!
    }
  ))
}

const insertShopReturning = cachedStatementPerShape((db, _: undefined, row: Insertable<ShopTable> & Values) =>
  withOwner(db.with('new_shop', q => q.insertInto('shop').values(row).returningAll()).selectFrom('new_shop as shop')))

/**
 * PUT and PATCH: replaces the name and description (absent or null: none). The guard and the
 * merge judge the shop as it is written (changeRow).
 */
export async function updateShop (db: Db, shopId: string, change: Change<Shop, ShopWrite>, guard: Guard<Shop>): Promise<Shop> {
  return changeRow(db, {
    lock: db => db.selectFrom('shop').select('id').where('id', '=', shopId),
    read: async db => {
      const row = await orNotFound(shopToChange(db, shopId), 'ShopNotFound', `no shop with id ${shopId}`)
      const current = toShop(row)
      guard(current)
      const body = bodyOf(change, current)
      return { version: row.version, columns: { name: body.name, description: body.description ?? null, updated_at: writeTimeIso() } }
    },
    statement: async (db, { version, columns }) => {
      const [row] = await updateShopReturning(db, undefined, { ...columns, id: shopId, version: version! })
      return row && toShop(row)
    },
    steps: async (trx, { columns }) => {
      await trx.updateTable('shop').set(columns).where('id', '=', shopId).execute()
      return toShop((await shopById(trx, shopId))!)
    }
  })
}

/** The shop a change reads: as shopById reads it, with the row's version (changeRow). */
const shopToChange = cachedRowStatement((db, shopId: string) =>
  selectShops(db).select(rowVersion(db, 'shop').as('version')).where('shop.id', '=', shopId))

/** The update in one statement (changeRow's), where the shop still has the version read, read back with its owner. */
type ShopChange = { id: string, version: string, name: string, description: string | null, updated_at: string }
const updateShopReturning = cachedStatementPerShape((db, _: undefined, v: ShopChange) => {
  const { id, version, ...columns } = v
  return withOwner(
    db.with('changed', q => q.updateTable('shop').set(columns).where('shop.id', '=', id).where(sameVersion('shop', version)).returningAll())
      .selectFrom('changed as shop')
  )
})

/** The PUT body that keeps a shop as it is: what a PATCH merges into. */
export function shopFields (shop: Shop): ShopWrite {
  return { name: shop.name, description: shop.description }
}

/** Its products go with it (ON DELETE CASCADE). */
export async function deleteShop (db: Db, shopId: string, guard: Guard<Shop>): Promise<void> {
  await db.transaction().execute(async trx => {
    guard(await lockShop(trx, shopId))
    await trx.deleteFrom('shop').where('id', '=', shopId).execute()
  })
}

async function lockShop (trx: Db, shopId: string): Promise<Shop> {
  await lockForUpdate(trx, trx.selectFrom('shop').select('id').where('id', '=', shopId))
  return getShop(trx, shopId)
}

const PRODUCT_SORT = { name: 'name', price_cents: 'price_cents', created_at: 'created_at', updated_at: 'updated_at' }

const productList = compiledList((db, v: { shopId: string; currency?: string; min?: number; max?: number }) => {
  let q = db.selectFrom('product').selectAll().where('shop_id', '=', v.shopId)
  if (v.currency !== undefined) q = q.where('currency', '=', v.currency)
  if (v.min !== undefined) q = q.where('price_cents', '>=', v.min)
  if (v.max !== undefined) q = q.where('price_cents', '<=', v.max)
  return q
})

export async function listProducts (db: Db, shopId: string, query: ProductListQuery, page: Page) {
  await getShop(db, shopId)
  const sort = parseSort(query.sort, PRODUCT_SORT, [{ column: 'created_at', direction: 'desc' }])
  const values = { shopId, currency: query.currency, min: query.min_price_cents, max: query.max_price_cents }
  const { rows, total } = await productList.page(db, values, sort, page)
  return { items: rows.map(toProduct), total }
}

/** A product is found only under its own shop: under another shop it is 404. */
export async function getProduct (db: Db, shopId: string, productId: string): Promise<Product> {
  const row = await orNotFound(productInShop(db, productId, shopId), 'ProductNotFound', `no product with id ${productId} in shop ${shopId}`)
  return toProduct(row)
}

/** The product, read back by the insert itself (RETURNING, on both databases). */
export async function createProduct (db: Db, shopId: string, body: ProductWrite): Promise<Product> {
  const now = writeTimeIso()
  const row = await db
    .insertInto('product')
    .values({
      id: randomUUID(),
      shop_id: shopId,
      name: body.name,
      description: body.description ?? null,
      price_cents: body.price_cents,
      currency: body.currency,
      created_at: now,
      updated_at: now
    })
    .returningAll()
    .executeTakeFirstOrThrow()
  return toProduct(row)
}

/**
 * PUT and PATCH: replaces the product's writable fields. The guard sees the shop (its owner) and
 * the product as they are; it and the merge judge the product as it is written (changeRow).
 */
export async function updateProduct (
  db: Db,
  shopId: string,
  productId: string,
  change: Change<Product, ProductWrite>,
  guard: Guard<{ shop: Shop; product: Product }>
): Promise<Product> {
  return changeRow(db, {
    lock: db => db.selectFrom('product').select('id').where('id', '=', productId).where('shop_id', '=', shopId),
    read: async db => {
      const row = await productToChange(db, shopId, productId)
      if (!row) {
        // the answers a change has always given: the shop's 404 first, then the product's
        await getShop(db, shopId)
        throw new AppError('ProductNotFound', `no product with id ${productId} in shop ${shopId}`)
      }
      const product = toProduct(row)
      guard({ shop: shopOfProduct(row), product })
      const body = bodyOf(change, product)
      const columns = {
        name: body.name,
        description: body.description ?? null,
        price_cents: body.price_cents,
        currency: body.currency,
        updated_at: writeTimeIso()
      }
      return { version: row.version, columns }
    },
    statement: async (db, { version, columns }) => {
      const [row] = await updateProductReturning(db, undefined, { ...columns, id: productId, shopId, version: version! })
      return row && toProduct(row)
    },
    steps: async (trx, { columns }) => {
      await trx.updateTable('product').set(columns).where('id', '=', productId).where('shop_id', '=', shopId).execute()
      return toProduct((await productInShop(trx, productId, shopId))!)
    }
  })
}

/**
 * The product a change reads, as productInShop reads it, with its shop and the shop's owner as
 * shopById reads them (shop columns prefixed `shop_`) and the product row's version (changeRow).
 */
const productToChange = cachedRowStatement((db, shopId: string, productId: string) =>
  db.selectFrom('product')
    .innerJoin('shop', 'shop.id', 'product.shop_id')
    .innerJoin('user', 'user.id', 'shop.owner_id')
    .innerJoin('profile', 'profile.id', 'shop.owner_id')
    .selectAll('product')
    .select([
      'shop.owner_id',
      'shop.name as shop_name',
      'shop.description as shop_description',
      'shop.created_at as shop_created_at',
      'shop.updated_at as shop_updated_at',
      ...PERSON_COLUMNS,
      rowVersion(db, 'product').as('version')
    ])
    .where('product.id', '=', productId)
    .where('product.shop_id', '=', shopId))

type ProductToChangeRow = NonNullable<Awaited<ReturnType<typeof productToChange>>>

function shopOfProduct (row: ProductToChangeRow): Shop {
  return toShop({
    ...row,
    id: row.shop_id,
    name: row.shop_name,
    description: row.shop_description,
    created_at: row.shop_created_at,
    updated_at: row.shop_updated_at
  })
}

/** The update in one statement (changeRow's), where the product still has the version read, read back. */
type ProductChange = {
  id: string, shopId: string, version: string, name: string, description: string | null, price_cents: number, currency: string, updated_at: string
}
const updateProductReturning = cachedStatementPerShape((db, _: undefined, v: ProductChange) => {
  const { id, shopId, version, ...columns } = v
  return db
    .with('changed', q => q.updateTable('product').set(columns)
      .where('product.id', '=', id).where('product.shop_id', '=', shopId).where(sameVersion('product', version)).returningAll())
    .selectFrom('changed').selectAll()
})

/** The PUT body that keeps a product as it is: what a PATCH merges into. */
export function productFields (product: Product): ProductWrite {
  return { name: product.name, description: product.description, price_cents: product.price_cents, currency: product.currency }
}

export async function deleteProduct (db: Db, shopId: string, productId: string, guard: Guard<{ shop: Shop; product: Product }>): Promise<void> {
  await db.transaction().execute(async trx => {
    guard(await lockProduct(trx, shopId, productId))
    await trx.deleteFrom('product').where('id', '=', productId).where('shop_id', '=', shopId).execute()
  })
}

async function lockProduct (trx: Db, shopId: string, productId: string): Promise<{ shop: Shop; product: Product }> {
  const shop = await getShop(trx, shopId)
  await lockForUpdate(trx, trx.selectFrom('product').select('id').where('id', '=', productId).where('shop_id', '=', shopId))
  return { shop, product: await getProduct(trx, shopId, productId) }
}
