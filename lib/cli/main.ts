#!/usr/bin/env node
/**
 * `npx nestjs-quorum-lock inspect|masters --nodes redis://a,redis://b,redis://c`: the lock masters as
 * an operator sees them, read-only (SCAN, GET, PTTL, INFO; never KEYS, never a write).
 * `npx nestjs-quorum-lock run --nodes … --resource R -- <command>`: a command run under a lock.
 */
import { runCli } from './commands.js';

runCli(process.argv.slice(2), process.stdout).then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    process.stderr.write(`nestjs-quorum-lock: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exitCode = 1;
  },
);
