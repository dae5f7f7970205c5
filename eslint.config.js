import js from '@eslint/js';
import tseslint from 'typescript-eslint';

/** Every Prometheus metric is declared in ops/metrics.service.ts (docs/architecture.md, `ops/`). */
const ONLY_METRICS_SERVICE = {
  name: 'prom-client',
  message: 'Declare the metric in src/ops/metrics.service.ts and use it through Metrics.',
};

/**
 * Stored items are decrypted only by the presenter (the API answer) and the updater (the item merge);
 * the supplier repository uses the same AES-GCM for the suppliers' API secrets (under their own
 * associated data, so it cannot open an item).
 */
const ONLY_PRESENTER_AND_UPDATER_DECRYPT = {
  regex: '(^|/)payload-(cipher\\.service|crypto)\\.js$',
  allowTypeImports: true,
  message: 'Only order-presenter.service.ts and order-updater.service.ts open stored items (docs/architecture.md, `orders/`).',
};

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', 'data/**', 'coverage/**', 'console/dist/**', 'test/.cache/**', 'bench/.out/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: { ecmaVersion: 2023, sourceType: 'module' },
    rules: {
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_', destructuredArrayIgnorePattern: '^_' },
      ],
      '@typescript-eslint/consistent-type-imports': 'off',
      'no-restricted-syntax': [
        'error',
        {
          selector: "MemberExpression[object.name='process'][property.name='env']",
          message: 'Read configuration through AppConfig; only src/config/load-env.ts reads process.env.',
        },
        {
          selector:
            "MemberExpression[object.name='process'][property.value='env'], VariableDeclarator[init.name='process'] > ObjectPattern > Property[key.name='env']",
          message: 'Read configuration through AppConfig; only src/config/load-env.ts reads process.env.',
        },
      ],
    },
  },
  // In src/ only config/load-env.ts reads process.env (docs/architecture.md, `config/`).
  {
    files: ['src/config/load-env.ts', 'test/**', 'bench/**', '**/*.spec.ts', '**/*.mjs', 'console/vite.config.ts'],
    rules: { 'no-restricted-syntax': 'off' },
  },
  // The rules of docs/architecture.md that an import shows (test/architecture-rules.spec.ts checks the others).
  {
    files: ['src/**/*.ts'],
    ignores: ['**/*.spec.ts'],
    rules: {
      '@typescript-eslint/no-restricted-imports': [
        'error',
        { paths: [ONLY_METRICS_SERVICE], patterns: [ONLY_PRESENTER_AND_UPDATER_DECRYPT] },
      ],
    },
  },
  {
    files: ['src/ops/metrics.service.ts'],
    rules: { '@typescript-eslint/no-restricted-imports': ['error', { patterns: [ONLY_PRESENTER_AND_UPDATER_DECRYPT] }] },
  },
  {
    files: [
      'src/orders/order-presenter.service.ts',
      'src/orders/order-updater.service.ts',
      'src/orders/orders.module.ts',
      'src/orders/payload-cipher.service.ts',
      'src/suppliers/supplier.repository.ts',
    ],
    rules: { '@typescript-eslint/no-restricted-imports': ['error', { paths: [ONLY_METRICS_SERVICE] }] },
  },
  {
    files: ['src/sandbox/**/*.ts'],
    rules: {
      '@typescript-eslint/no-restricted-imports': [
        'error',
        {
          paths: [ONLY_METRICS_SERVICE],
          patterns: [
            {
              regex: '^\\.\\./(?!signing/)',
              message:
                'The sandbox imports nothing from the service but src/signing/ (docs/architecture.md): declare what it needs in the sandbox.',
            },
          ],
        },
      ],
    },
  },
  {
    files: ['**/*.mjs'],
    languageOptions: { globals: { process: 'readonly', console: 'readonly', Buffer: 'readonly', URL: 'readonly' } },
  },
);
