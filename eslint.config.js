// ESLint flat config: typescript-eslint's type-aware recommended rules, with
// Prettier owning layout (eslint-config-prettier turns the layout rules off).
import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import prettier from 'eslint-config-prettier';

export default tseslint.config(
  {
    ignores: [
      'eslint.config.js',
      'node_modules/',
      'dist/',
      'client/dist/',
      'coverage/',
      '.data/',
      'migrations/',
      'client/src/schema.ts',
      'tests/bench/.tmp/',
    ],
  },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      // The one plain-JS file: a preload the bench passes in NODE_OPTIONS, where a .ts file would need tsx loaded first.
      parserOptions: {
        projectService: { allowDefaultProject: ['tests/bench/cpu-profile-preload.mjs'] },
        tsconfigRootDir: import.meta.dirname,
      },
    },
    rules: {
      // Unused bindings are dead code, except the `_`-prefixed ones that keep a signature.
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none' }],
      // Fastify route handlers and hooks are async by contract even when they await nothing.
      '@typescript-eslint/require-await': 'off',
    },
  },
  {
    // Tests are black-box: they read JSON answers (typed `any` by inject/fetch) and poke at
    // them. Typing every body would restate the OpenAPI schemas; the assertions are the check.
    files: ['tests/**/*.ts', 'scripts/**/*.ts'],
    rules: {
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-call': 'off',
      '@typescript-eslint/no-unsafe-argument': 'off',
      '@typescript-eslint/no-unsafe-return': 'off',
      '@typescript-eslint/no-explicit-any': 'off',
    },
  },
  {
    // style.md: imports point down (app.ts → jobs/ → domains/ → venues/, lib/, db/).
    // A domain never reaches up into the scheduler or the composition root.
    files: ['src/domains/**/*.ts', 'src/venues/**/*.ts', 'src/lib/**/*.ts', 'src/db/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              group: ['**/jobs/*', '**/jobs'],
              message: 'Domains never import the scheduler: jobs compose domain functions (docs/architecture.md).',
            },
            { group: ['**/app', '**/app.js', '**/server', '**/server.js'], message: 'Domains never import the composition root.' },
          ],
        },
      ],
    },
  },
  {
    // Plugins are cross-cutting (db, redis, signals, rate limit, docs…) and know no domain: a
    // domain's plugin lives in its domain, and what a plugin needs of one is passed in by app.ts.
    files: ['src/plugins/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            { group: ['**/domains/*', '**/domains/**'], message: 'Plugins never import domains: app.ts passes in what they need.' },
            { group: ['**/jobs/*', '**/jobs'], message: 'Plugins never import the scheduler.' },
            { group: ['**/app', '**/app.js', '**/server', '**/server.js'], message: 'Plugins never import the composition root.' },
          ],
        },
      ],
    },
  },
  {
    files: ['src/venues/**/*.ts', 'src/lib/**/*.ts', 'src/db/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            { group: ['**/jobs/*', '**/jobs'], message: 'Lower layers never import the scheduler.' },
            { group: ['**/domains/*', '**/domains/**'], message: 'venues/, lib/ and db/ sit below the domains and never import them.' },
            { group: ['**/app', '**/app.js', '**/server', '**/server.js'], message: 'Lower layers never import the composition root.' },
          ],
        },
      ],
    },
  },
  prettier,
);
