/**
 * `npm run bench`: starts its own redis-server masters, runs every workload for this library, the peers
 * and the raw quorum limit, interleaving them round-robin in each round, and writes docs/evidence/bench-results.md,
 * bench-results.svg and bench-results.json. `npm run bench -- --memory` runs the long memory check.
 * `npm run bench -- --compare REF` runs this checkout against another commit (bench/compare.ts).
 * `npm run bench -- --help` lists the flags.
 */
import 'reflect-metadata';
import { runCompare } from './compare.js';
import { runMemory } from './memory.js';
import { parseOptions, USAGE } from './options.js';
import { renderSaved, runSuite } from './suite.js';

const notes: string[] = [];
const note = (text: string) => {
  if (notes.length < 200 && !notes.includes(text)) notes.push(text);
  console.log(`  ! ${text}`);
};
// A peer that rejects or throws outside any awaited promise must not end the whole run.
process.on('unhandledRejection', (reason) =>
  note(`unhandled rejection: ${String((reason as Error)?.message ?? reason).slice(0, 200)}`),
);
process.on('uncaughtException', (error) =>
  note(`uncaught exception: ${String(error?.message ?? error).slice(0, 200)}`),
);

let config;
try {
  config = parseOptions(process.argv.slice(2));
} catch (error) {
  console.error(`bench: ${(error as Error).message}\n\n${USAGE}`);
  process.exit(2);
}
if (config === 'help') {
  console.log(USAGE);
} else {
  if (config.render) await renderSaved(config.out);
  else if (config.memory.enabled) await runMemory(config, note);
  else if (config.compare !== undefined) await runCompare(config, notes, note);
  else await runSuite(config, notes, note);
  // Peers may keep timers (renewals, reconnects) alive; the servers are gone, so leave now.
  process.exit(notes.some((n) => n.startsWith('memory check failed')) ? 1 : 0);
}
