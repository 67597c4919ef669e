#!/usr/bin/env node
import { main } from './main.js';

main(process.argv.slice(2), process.env).then(
  (status) => {
    process.exitCode = status;
  },
  (error: unknown) => {
    process.stderr.write(`sluice: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exitCode = 1;
  },
);
