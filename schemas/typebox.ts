import { createRequire } from 'node:module'
import type * as TypeBox from '@sinclair/typebox'

/**
 * TypeBox's builder, from its CommonJS build: Node 20 loads its 200 ES modules in about 100 ms,
 * the CommonJS build in 70. Schemas take `Type` from here, so one copy is loaded
 * (test/architecture.test.ts holds to it); types are erased.
 */
export type * from '@sinclair/typebox'
export const Type = (createRequire(import.meta.url)('@sinclair/typebox') as typeof TypeBox).Type
