export type { Command } from './args.js';
export { parseCommand, USAGE, UsageError } from './args.js';
export type { Output } from './main.js';
export { main } from './main.js';
