// A NestJS app for the tests, on platform-express or platform-fastify, served on 127.0.0.1 port 0.
import 'reflect-metadata';
import type { AddressInfo } from 'node:net';
import { type DynamicModule, type INestApplication, Module, type Provider, type Type } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { ExpressAdapter } from '@nestjs/platform-express';
import { FastifyAdapter } from '@nestjs/platform-fastify';

export type Platform = 'express' | 'fastify';
export const PLATFORMS: Platform[] = ['express', 'fastify'];

export interface AppSpec {
  imports?: Array<DynamicModule | Type<unknown>>;
  controllers?: Type<unknown>[];
  providers?: Provider[];
  /** Called with the app before it listens (filters, adapters). */
  setup?: (app: INestApplication) => void;
}

export interface RunningApp {
  app: INestApplication;
  url: string;
  close(): Promise<void>;
}

/** A module made of `spec`: a class of its own each time, as Nest keys modules by class. */
export function moduleOf(spec: AppSpec): Type<unknown> {
  class TestModule {}
  Module({ imports: spec.imports ?? [], controllers: spec.controllers ?? [], providers: spec.providers ?? [] })(TestModule);
  return TestModule;
}

/** Starts an app of `spec` on `platform`; `close()` stops it. */
export async function startNest(platform: Platform, spec: AppSpec): Promise<RunningApp> {
  const adapter = platform === 'express' ? new ExpressAdapter() : new FastifyAdapter();
  const app = await NestFactory.create(moduleOf(spec), adapter, { logger: false, abortOnError: false });
  spec.setup?.(app);
  await app.listen(0, '127.0.0.1');
  const { port } = app.getHttpServer().address() as AddressInfo;
  return { app, url: `http://127.0.0.1:${port}`, close: () => app.close() };
}
