import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { IdempotencyHeaders, IfMatchHeaders, NoContent, NotModified, ref } from '../../../schemas/common.js'
import { errorResponses } from '../../../schemas/problems.js'
import type { Product as ProductT, Shop as ShopT } from '../../../schemas/shops.js'
import {
  Product,
  ProductList,
  ProductListQuery,
  ProductParams,
  ProductPatch,
  ProductWrite,
  Shop,
  ShopList,
  ShopListQuery,
  ShopParams,
  ShopPatch,
  ShopWrite
} from '../../../schemas/shops.js'
import { created, listReply } from '../replies.js'
import {
  createProduct,
  createShop,
  deleteProduct,
  deleteShop,
  getProduct,
  getShop,
  listProducts,
  listShops,
  productFields,
  shopFields,
  updateProduct,
  updateShop
} from '../../domain/shops.js'
import { authErrors, security } from '../guards.js'
import { registerUpdates } from '../updates.js'

const tags = ['shops']
const ownerOfShop = (shop: ShopT) => shop.owner.id

/** Shops and products: anyone reads; creators open shops; the shop's owner writes (group below). */
const shops: FastifyPluginAsyncTypebox = async fastify => {
  const { db } = fastify

  fastify.get(
    '/shops',
    {
      schema: {
        tags,
        operationId: 'listShops',
        summary: 'All shops',
        querystring: ShopListQuery,
        response: { 200: ref(ShopList), ...errorResponses('ValidationFailed') }
      }
    },
    async (request, reply) => {
      const { items, total } = await listShops(db, request.query, request.query)
      return listReply(request, reply, 'shops', items, total, request.query)
    }
  )

  fastify.get(
    '/shops/:shopId',
    {
      config: { etag: true },
      schema: {
        tags,
        operationId: 'getShop',
        summary: 'One shop',
        params: ShopParams,
        response: { 200: ref(Shop), 304: NotModified, ...errorResponses('ValidationFailed', 'ShopNotFound') }
      }
    },
    async request => getShop(db, request.params.shopId)
  )

  fastify.get(
    '/shops/:shopId/products',
    {
      schema: {
        tags,
        operationId: 'listProducts',
        summary: 'The products of a shop',
        params: ShopParams,
        querystring: ProductListQuery,
        response: { 200: ref(ProductList), ...errorResponses('ValidationFailed', 'ShopNotFound') }
      }
    },
    async (request, reply) => {
      const { items, total } = await listProducts(db, request.params.shopId, request.query, request.query)
      return listReply(request, reply, 'products', items, total, request.query)
    }
  )

  fastify.get(
    '/shops/:shopId/products/:productId',
    {
      config: { etag: true },
      schema: {
        tags,
        operationId: 'getProduct',
        summary: 'One product of a shop',
        params: ProductParams,
        response: { 200: ref(Product), 304: NotModified, ...errorResponses('ValidationFailed', 'ShopNotFound', 'ProductNotFound') }
      }
    },
    async request => getProduct(db, request.params.shopId, request.params.productId)
  )

  await fastify.register(writes)
}

const writes: FastifyPluginAsyncTypebox = async fastify => {
  fastify.addHook('onRequest', fastify.authenticate)
  const { db } = fastify
  // changing a shop or product needs creator rights still, deleting it only ownership
  const ownShop = { of: ownerOfShop }
  const ownProduct = { of: ({ shop }: { shop: ShopT }) => shop.owner.id, item: ({ product }: { product: ProductT }) => product }
  const auth = [...authErrors, 'ValidationFailed'] as const

  fastify.post(
    '/shops',
    {
      config: { idempotent: true },
      onRequest: fastify.requireCreator,
      schema: {
        tags,
        security,
        operationId: 'createShop',
        summary: 'Open a shop (creators)',
        headers: IdempotencyHeaders,
        body: ref(ShopWrite),
        response: { 201: ref(Shop), ...errorResponses(...auth, 'UserNotCreator', 'Conflict') }
      }
    },
    async (request, reply) => {
      const shop = await createShop(db, request.user.id, request.body)
      return created(reply, `/v1/shops/${shop.id}`, shop)
    }
  )

  registerUpdates(fastify, {
    url: '/shops/:shopId',
    tags,
    params: ShopParams,
    body: ShopWrite,
    patchBody: ShopPatch,
    response: Shop,
    errors: [...auth, 'UserNotOwner', 'UserNotCreator', 'ShopNotFound', 'PreconditionFailed'],
    put: {
      operationId: 'updateShop',
      summary: "Replace a shop's writable fields (owner)"
    },
    patch: {
      operationId: 'patchShop',
      summary: 'Change some fields of a shop (owner), a JSON Merge Patch'
    },
    fieldsOf: shopFields,
    owner: { ...ownShop, creator: true },
    run: (request, _reply, change) => updateShop(db, request.params.shopId, change, request.owned)
  })

  fastify.delete(
    '/shops/:shopId',
    {
      config: { owner: ownShop },
      schema: {
        tags,
        security,
        operationId: 'deleteShop',
        summary: 'Close a shop and remove its products (owner)',
        params: ShopParams,
        headers: IfMatchHeaders,
        response: { 204: NoContent, ...errorResponses(...auth, 'UserNotOwner', 'ShopNotFound', 'PreconditionFailed') }
      }
    },
    async (request, reply) => {
      await deleteShop(db, request.params.shopId, request.owned)
      return reply.code(204).send(null)
    }
  )

  fastify.post(
    '/shops/:shopId/products',
    {
      config: { idempotent: true, owner: { ...ownShop, creator: true } },
      schema: {
        tags,
        security,
        operationId: 'createProduct',
        summary: 'Add a product to a shop (owner)',
        params: ShopParams,
        headers: IdempotencyHeaders,
        body: ref(ProductWrite),
        response: { 201: ref(Product), ...errorResponses(...auth, 'UserNotOwner', 'UserNotCreator', 'ShopNotFound', 'Conflict') }
      }
    },
    async (request, reply) => {
      const shop = request.owned(await getShop(db, request.params.shopId))
      const product = await createProduct(db, shop.id, request.body)
      return created(reply, `/v1/shops/${shop.id}/products/${product.id}`, product)
    }
  )

  registerUpdates(fastify, {
    url: '/shops/:shopId/products/:productId',
    tags,
    params: ProductParams,
    body: ProductWrite,
    patchBody: ProductPatch,
    response: Product,
    errors: [...auth, 'UserNotOwner', 'UserNotCreator', 'ShopNotFound', 'ProductNotFound', 'PreconditionFailed'],
    put: {
      operationId: 'updateProduct',
      summary: "Replace a product's writable fields (shop owner)"
    },
    patch: {
      operationId: 'patchProduct',
      summary: 'Change some fields of a product (shop owner), a JSON Merge Patch'
    },
    fieldsOf: productFields,
    owner: { ...ownProduct, creator: true },
    run: (request, _reply, change) => updateProduct(db, request.params.shopId, request.params.productId, change, request.owned)
  })

  fastify.delete(
    '/shops/:shopId/products/:productId',
    {
      config: { owner: ownProduct },
      schema: {
        tags,
        security,
        operationId: 'deleteProduct',
        summary: 'Remove a product (shop owner)',
        params: ProductParams,
        headers: IfMatchHeaders,
        response: { 204: NoContent, ...errorResponses(...auth, 'UserNotOwner', 'ShopNotFound', 'ProductNotFound', 'PreconditionFailed') }
      }
    },
    async (request, reply) => {
      await deleteProduct(db, request.params.shopId, request.params.productId, request.owned)
      return reply.code(204).send(null)
    }
  )
}

export default shops
