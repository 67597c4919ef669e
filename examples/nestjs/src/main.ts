// NestJS with @sluice/nestjs, on platform-express (or platform-fastify with PLATFORM=fastify): every handler is
// limited per client and fails open, POST /login is strict and fails closed to a small per-process limit,
// GET /health is never limited, and each socket.io client may send 5 `echo` messages a second (a sixth gets an
// `exception` event). Counts in the embedded memory store, or in Redis when REDIS_URL is set.
import 'reflect-metadata';
import { Controller, Get, Module, Post, Req, UseGuards } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { ExpressAdapter } from '@nestjs/platform-express';
import { FastifyAdapter } from '@nestjs/platform-fastify';
import { MessageBody, SubscribeMessage, WebSocketGateway } from '@nestjs/websockets';
import { type LimiterEvent, memoryStore, redisStore } from '@sluice/core';
import { type Decision, RateLimit, SkipRateLimit, SluiceGuard, SluiceModule } from '@sluice/nestjs';
import { Redis } from 'ioredis';

const redis = process.env.REDIS_URL ? new Redis(process.env.REDIS_URL) : undefined;
redis?.on('error', () => {}); // while it is down, the fail modes decide (the breaker's events say so)
const store = redis ? redisStore({ client: redis }) : memoryStore();
const onEvent = (event: LimiterEvent) => {
  if (event.type === 'breaker-open' || event.type === 'breaker-close') console.log(`sluice: ${event.type}`);
};
const left = (d: Decision | undefined) => (d?.source === 'fail-open' ? 'count unknown (store down)' : `${d?.remaining} left`);

@Controller()
class AppController {
  @Get()
  hello(@Req() req: { rateLimit?: Decision }) {
    return `hello, ${left(req.rateLimit)} this minute\n`;
  }

  @Post('login')
  @RateLimit('5/15m', { failMode: 'closed', fallback: '2/15m' })
  login() {
    return 'logged in\n';
  }

  @Get('health')
  @SkipRateLimit()
  health() {
    return 'ok\n';
  }
}

@WebSocketGateway()
@UseGuards(SluiceGuard) // Nest applies no global guard to gateways
class EchoGateway {
  @SubscribeMessage('echo')
  @RateLimit('5/1s')
  echo(@MessageBody() text: string) {
    return { event: 'echo', data: text };
  }
}

@Module({
  imports: [SluiceModule.forRoot({ policy: '10/1m', store, failMode: 'open', onEvent })],
  controllers: [AppController],
  providers: [EchoGateway],
})
class AppModule {}

async function main() {
  const platform = process.env.PLATFORM === 'fastify' ? 'fastify' : 'express';
  // Behind a proxy: new ExpressAdapter() then app.set('trust proxy', 1), or new FastifyAdapter({ trustProxy: 1 }).
  const adapter = platform === 'fastify' ? new FastifyAdapter() : new ExpressAdapter();
  const app = await NestFactory.create(AppModule, adapter);
  const port = Number(process.env.PORT ?? 3000);
  await app.listen(port, '0.0.0.0');
  console.log(`listening on http://localhost:${port} (platform-${platform}, ${redis ? 'Redis' : 'memory store'})`);
}

void main();
