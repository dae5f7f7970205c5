// Jest in native ESM mode (NODE_OPTIONS=--experimental-vm-modules, set by `npm test`).
// Sources are TypeScript compiled by SWC with legacy decorators and decorator metadata (NestJS DI).
const swc = {
  swcrc: false,
  sourceMaps: 'inline',
  jsc: {
    parser: { syntax: 'typescript', decorators: true },
    transform: { legacyDecorator: true, decoratorMetadata: true, useDefineForClassFields: false },
    target: 'es2022',
    keepClassNames: true,
  },
  module: { type: 'es6' },
};

/**
 * Files of test/ that the PostgreSQL pass does not load: what they run is the same whatever database the
 * suite is given, so the embedded pass checks it once. Each names why; a file that touches the test
 * database (openTestDatabase, useAppSuite) belongs here only if none of its SQL depends on it.
 */
const DATABASE_INDEPENDENT = {
  // the embedded database itself, under a scratch DATA_DIR of each process (each file also skips
  // itself with TEST_DATABASE_URL)
  'data-dir-lock': 'the lock of an embedded data directory, between real processes',
  'embedded-postgres': 'the embedded database on disk',
  'embedded-worker': "the embedded database's worker thread",
  'test-database': "the embedded pass's worker-shared PGlite",
  // the service started from nothing: its database is always an embedded one it creates
  'start-banner': 'the lines of a zero-configuration start, before its banner',
  // no database at all
  'cli-args': "the relay command's argument parsing",
};

export default {
  testEnvironment: 'node',
  roots: ['<rootDir>/src', '<rootDir>/test'],
  // The specs beside the code (src/**/*.spec.ts) use no database: the PostgreSQL pass
  // (TEST_DATABASE_URL) runs only the tests under test/, but those above.
  testMatch: process.env.TEST_DATABASE_URL ? ['**/*.e2e-spec.ts'] : ['**/*.spec.ts', '**/*.e2e-spec.ts'],
  testPathIgnorePatterns: [
    '/node_modules/',
    ...(process.env.TEST_DATABASE_URL ? Object.keys(DATABASE_INDEPENDENT).map((name) => `/test/${name}\\.e2e-spec\\.ts$`) : []),
  ],
  extensionsToTreatAsEsm: ['.ts'],
  transform: {
    '^.+\\.ts$': ['@swc/jest', swc],
    // ESM-only dependencies that CommonJS packages require() (Node 20.19 allows it, Jest's CJS loader
    // does not): compiled to CommonJS for Jest.
    '/node_modules/content-disposition/.+\\.js$': ['@swc/jest', { swcrc: false, module: { type: 'commonjs' } }],
  },
  transformIgnorePatterns: ['/node_modules/(?!(@fastify/static/node_modules/)?content-disposition/)'],
  moduleNameMapper: { '^(\\.{1,2}/.*)\\.js$': '$1' },
  globalSetup: '<rootDir>/test/support/global-setup.mjs',
  globalTeardown: '<rootDir>/test/support/global-teardown.mjs',
  setupFiles: ['<rootDir>/test/support/setup-env.ts'],
  testTimeout: 60000,
  // Three workers for two cores on either pass: a test file spends about half its time waiting (timers,
  // child processes, the sandbox's pacing, and on the PostgreSQL pass the server's own processes), so
  // two workers leave the cores half idle; CI runs both passes side by side as well.
  maxWorkers: 3,
  // A worker told to end has nothing left open, but Node's own teardown of its process after the
  // 'exit' event (the heap of every file's modules, on the embedded pass the database's thread) takes
  // 0.4–1.1 s on a loaded machine (both passes side by side on two cores), past Jest's 500 ms default
  // for a graceful exit: Jest then kills it and reports a leak that is not one. A real leak (a timer,
  // a socket, a server left open) still keeps a worker past this and is reported.
  workerGracefulExitTimeout: 5000,
  verbose: false,
};
