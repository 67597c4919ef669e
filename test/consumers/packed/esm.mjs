// An ES module app: the packages come in by their "import" conditions.
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import * as core from '@sluice/core';
import * as express from '@sluice/express';
import * as fastify from '@sluice/fastify';
import * as graphql from '@sluice/graphql';
import * as hono from '@sluice/hono';
import * as koa from '@sluice/koa';
import * as nestjs from '@sluice/nestjs';

const names = [
  '@sluice/core',
  '@sluice/core/adapter',
  '@sluice/express',
  '@sluice/fastify',
  '@sluice/koa',
  '@sluice/hono',
  '@sluice/graphql',
  '@sluice/nestjs',
];
const resolved = Object.fromEntries(names.map((name) => [name, fileURLToPath(import.meta.resolve(name))]));
const exercise = createRequire(import.meta.url)('./exercise.cjs');
console.log(JSON.stringify(await exercise({ core, express, fastify, koa, hono, graphql, nestjs, resolved })));
