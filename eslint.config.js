import neostandard from 'neostandard'
import tseslint from 'typescript-eslint'

// The Fastify ecosystem's own style (neostandard), and typescript-eslint's type-aware rules for
// the promise bugs a review misses. A rule the code cannot meet is changed here with its reason.
export default [
  ...neostandard({ ts: true, ignores: ['client/**', 'dist/**', '.tap/**', 'bench/.tmp/**', 'coverage/**'] }),
  {
    files: ['**/*.ts'],
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname }
    },
    plugins: { '@typescript-eslint': tseslint.plugin },
    rules: {
      // tap's t.test returns a promise that tap itself awaits
      '@typescript-eslint/no-floating-promises': ['error', { allowForKnownSafeCalls: [{ from: 'package', name: ['test', 'skip', 'todo'], package: '@tapjs/test' }] }],
      // Fastify's hook and handler types take async functions where their overloads say void
      '@typescript-eslint/no-misused-promises': ['error', { checksVoidReturn: { arguments: false, properties: false, variables: false } }],
      '@stylistic/max-len': ['error', { code: 160, ignoreUrls: true, ignoreRegExpLiterals: true, ignoreTemplateLiterals: true, ignoreComments: true }],
      // TypeBox's idiom: a schema and its Static<> type share one name (`Post` and `type Post`)
      '@typescript-eslint/no-redeclare': 'off',
      // snake_case is the API's own spelling (the spec's JSON properties), destructured as such
      camelcase: ['error', { properties: 'never', ignoreDestructuring: true, ignoreImports: true }],
      // `void promise` is how a promise left to run on its own is marked
      'no-void': ['error', { allowAsStatement: true }],
      // the patterns that name control characters are the rules that refuse them
      'no-control-regex': 'off',
      // worker loops run until a closure clears their flag, which this rule cannot see
      'no-unmodified-loop-condition': 'off',
      // prom-client registers a metric when it is constructed
      'no-new': 'off',
      // Ajv's CommonJS class reached through its `default`
      'new-cap': ['error', { newIsCap: true, capIsNew: false, properties: true, newIsCapExceptions: ['default'] }]
    }
  },
  {
    // prose for the OpenAPI documents, one sentence a line however long the sentence
    files: ['schemas/descriptions.ts'],
    rules: { '@stylistic/max-len': ['error', { code: 160, ignoreStrings: true }] }
  }
]
