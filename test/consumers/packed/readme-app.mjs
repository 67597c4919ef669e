// A newcomer's first app, in a project that ran the Express line `pnpm pack:all` prints: two requests on a
// '1/1m' route, the second refused. Prints the statuses as JSON.
import { rateLimit } from '@sluice/express';
import express from 'express';

const app = express();
app.use(rateLimit({ policy: '1/1m' }));
app.get('/', (_req, res) => res.send('hello'));
const server = app.listen(0, '127.0.0.1', async () => {
  const statuses = [];
  for (let i = 0; i < 2; i++) {
    const res = await fetch(`http://127.0.0.1:${server.address().port}/`);
    await res.text();
    statuses.push(res.status);
  }
  console.log(JSON.stringify(statuses));
  server.close();
});
