#!/usr/bin/env node
// The `sluice` command runs the build of src/bin.ts. This file exists before any build, so that installing
// the workspace links the command (pnpm links no bin whose file is missing) and `pnpm exec sluice` works
// once `pnpm build` has run.
import '../dist/esm/bin.js';
