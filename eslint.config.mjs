// ESLint flat config for the extension's TypeScript (the daemon is linted by ruff).
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['out/**', 'dist/**', 'node_modules/**', '.tools/**', 'extension/bundled/**', 'daemon/**', '.venv/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    files: ['extension/**/*.ts'],
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_' }],
      '@typescript-eslint/consistent-type-imports': ['error', { fixStyle: 'inline-type-imports' }],
      eqeqeq: ['error', 'smart'],
      'no-restricted-imports': 'off',
    },
  },
  {
    // Modules with unit-tested logic stay free of the vscode API.
    files: [
      'extension/src/settings.ts',
      'extension/src/interpreter.ts',
      'extension/src/render.ts',
      'extension/src/status.ts',
      'extension/src/doctor.ts',
      'extension/src/pick.ts',
      'extension/src/restartQueue.ts',
      'extension/src/protocol.ts',
      'extension/test/unit/**/*.ts',
    ],
    rules: { 'no-restricted-imports': ['error', { paths: [{ name: 'vscode', message: 'keep this module testable without VS Code' }] }] },
  },
  {
    // node:test's describe()/it() return promises the runner itself awaits.
    files: ['extension/test/unit/**/*.ts'],
    rules: { '@typescript-eslint/no-floating-promises': 'off' },
  },
  {
    files: ['**/*.mjs', '**/*.js'],
    ...tseslint.configs.disableTypeChecked,
    languageOptions: {
      globals: { console: 'readonly', process: 'readonly', setTimeout: 'readonly', clearTimeout: 'readonly', URL: 'readonly', Buffer: 'readonly', fetch: 'readonly', document: 'readonly', window: 'readonly', navigator: 'readonly', performance: 'readonly', setInterval: 'readonly', clearInterval: 'readonly' },
    },
  },
);
