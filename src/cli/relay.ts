#!/usr/bin/env node
/** Entry of the `relay` command; see relay-cli.ts. */
import { runCli } from './relay-cli.js';

runCli(process.argv.slice(2)).then(
  (code) => {
    // `relay sandbox` keeps running until a signal; every other command exits with its code.
    if (process.argv[2] === 'sandbox') process.exitCode = code;
    else process.exit(code);
  },
  (e: unknown) => {
    process.stderr.write(`relay: ${String(e)}\n`);
    process.exit(1);
  },
);
