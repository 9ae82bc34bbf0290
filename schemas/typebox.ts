/**
 * TypeBox's builder, imported in this one module so one build of TypeBox is loaded. `npm start`
 * runs the bundle (scripts/bundle.ts), which inlines the parts used; test/architecture.test.ts holds to it.
 */
export type * from '@sinclair/typebox'
export { Type } from '@sinclair/typebox'
